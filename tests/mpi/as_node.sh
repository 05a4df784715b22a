#!/bin/bash
# usage: as_node.sh RANKS_PER_NODE COMMAND...: runs COMMAND (one rank of an mpirun job) under the host name
# n<rank / RANKS_PER_NODE>, in a UTS namespace of its own (root), so that one machine looks like several
# nodes to code that tells nodes apart by host name (`ddplab calibrate`'s link classes).
per=$1
shift
exec unshare --uts bash -c 'hostname "n$((OMPI_COMM_WORLD_RANK / $0))" && exec "$@"' "$per" "$@"
