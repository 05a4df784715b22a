// ddplab_test_pch's one source: the target exists for its precompiled header (GoogleTest and the common
// set, cmake/DdplabPch.cmake), which every test executable reuses.
