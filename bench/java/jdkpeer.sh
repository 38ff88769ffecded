#!/bin/sh
# jdkpeer: runs bench/java/Peer.java's classes with JDK 17's java (the Makefile writes its
# path in place of @JAVA@ when it installs this script as $(BUILD)/bench/jdkpeer, beside
# the classes in $(BUILD)/bench/java). The same command line as the other peers:
#   jdkpeer JOB [--warmup N] [--iterations N] [--time S]
# tcp-blocking runs the bench/tcpserve beside it unless SCHEDLAB_TCPSERVE names another;
# JDKPEER_OPTS adds JVM options (-XX:+PreserveFramePointer for profiles, say).
dir=$(dirname "$0")
SCHEDLAB_TCPSERVE=${SCHEDLAB_TCPSERVE:-$dir/tcpserve}
export SCHEDLAB_TCPSERVE
# shellcheck disable=SC2086 # JDKPEER_OPTS is a list of options
exec @JAVA@ ${JDKPEER_OPTS:-} -cp "$dir/java" Peer "$@"
