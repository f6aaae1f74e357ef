#!/bin/bash
# chassis-model.sh DIR get PARM... | chassis-model.sh DIR set PARM VAL...
#
# ipmi_sim's chassis_control program for tests without a machine: the power
# state and boot device live in files of DIR. Soft power off is honoured only
# when DIR/soft-honoured exists (a guest OS that listens to the power button).
# DIR/calls.log records every call; DIR/hang makes calls block (a hung BMC).
DIR=$1; shift; OP=$1; shift
echo "$OP $*" >> "$DIR/calls.log"
while [ -e "$DIR/hang" ]; do sleep 0.1; done
case $OP in
    get)
        for parm in "$@"; do
            case $parm in
                power) echo "power:$(cat "$DIR/power" 2>/dev/null || echo 0)" ;;
                boot) echo "boot:$(cat "$DIR/boot" 2>/dev/null || echo none)" ;;
                *) echo "unsupported get $parm"; exit 1 ;;
            esac
        done ;;
    set)
        while [ $# -ge 2 ]; do
            case $1 in
                power) echo "$2" > "$DIR/power" ;;
                boot) echo "$2" > "$DIR/boot" ;;
                shutdown) [ -e "$DIR/soft-honoured" ] && echo 0 > "$DIR/power" ;;
                reset|identify) ;;
                *) echo "unsupported set $1"; exit 1 ;;
            esac
            shift 2
        done ;;
    *) exit 1 ;;
esac
exit 0
