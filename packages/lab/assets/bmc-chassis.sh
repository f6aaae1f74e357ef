#!/bin/bash
# bmc-chassis.sh DIR get PARM...  |  bmc-chassis.sh DIR set PARM VAL...
#
# The chassis_control program of one lab BMC (OpenIPMI ipmi_sim, see bmc.ts): ipmi_sim runs
# it for every chassis command ipmitool sends, and it drives the machine's QEMU.
#   get power            -> "power:1" while this machine's QEMU runs, else "power:0"
#   set power 1|0        -> start QEMU (-daemonize) with the boot order of DIR/bootdev | stop it
#   set reset 1          -> stop, then start (a cold restart that honours the boot device)
#   set shutdown 1       -> ACPI power button through QMP (the guest decides)
#   set boot DEV         -> DIR/bootdev (pxe | default = ipmitool "disk" | none | cdrom | bios);
#                           used at the next power on
#   get boot             -> "boot:DEV"
# ipmi_sim waits for this program (its pipe must be closed, so QEMU's stdio goes to files)
# and ipmitool retransmits after about a second: every branch is quick.
set -u
DIR=$1; shift
OP=${1:-}; shift || true
# NAME QEMU (binary) NODE (node binary) QMP (socket path) SERIAL (log) DEFAULT_ORDER
# NETNS (the network namespace QEMU runs in when ipmi_sim runs outside it; empty: where ipmi_sim runs)
. "$DIR/machine.env"

log() { printf '%s %s\n' "$(date +%H:%M:%S.%3N)" "$*" >> "$DIR/chassis.log"; }

# A zombie counts as gone: a -daemonize'd QEMU belongs to PID 1, which may reap it late.
alive() { local s; s=$(awk '/^State:/{print $2}' "/proc/${1:-x}/status" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]; }

qemu_pid() {
    local pid
    pid=$(cat "$DIR/qemu.pid" 2>/dev/null) || return 1
    alive "$pid" || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-name $NAME " || return 1
    echo "$pid"
}

boot_order() {
    case $(cat "$DIR/bootdev" 2>/dev/null || echo none) in
        pxe) echo n ;;
        default|bios) echo c ;;
        cdrom) echo d ;;
        *) echo "$DEFAULT_ORDER" ;;
    esac
}

power_on() {
    qemu_pid > /dev/null && return 0
    local order args
    order=$(boot_order)
    printf '\n=== power on, bootdev=%s, order=%s ===\n' "$(cat "$DIR/bootdev" 2>/dev/null || echo none)" "$order" >> "$SERIAL"
    mapfile -t args < "$DIR/qemu.args"
    rm -f "$DIR/qemu.pid"
    ${NETNS:+ip netns exec "$NETNS"} "$QEMU" "${args[@]}" -boot "order=$order,reboot-timeout=1000" \
        -pidfile "$DIR/qemu.pid" -daemonize < /dev/null >> "$DIR/qemu.log" 2>&1
}

power_off() {
    local pid
    pid=$(qemu_pid) || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 40); do alive "$pid" || return 0; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null
}

soft_off() {
    qemu_pid > /dev/null || return 0
    "$NODE" -e '
      const s = require("net").connect(process.argv[1]);
      s.setTimeout(800, () => process.exit(1));
      s.write("{\"execute\":\"qmp_capabilities\"}\n{\"execute\":\"system_powerdown\"}\n");
      let seen = 0;
      s.on("data", (d) => { seen += (String(d).match(/"return"/g) || []).length; if (seen >= 2) process.exit(0); });
    ' "$QMP"
}

log "$OP $*"
rc=0
case $OP in
    get)
        for parm in "$@"; do
            case $parm in
                power) if qemu_pid > /dev/null; then echo power:1; else echo power:0; fi ;;
                boot) echo "boot:$(cat "$DIR/bootdev" 2>/dev/null || echo none)" ;;
                *) echo "unsupported get $parm"; rc=1 ;;
            esac
        done ;;
    set)
        while [ $# -ge 2 ]; do
            case $1 in
                power) if [ "$2" = 1 ]; then power_on || { echo "qemu did not start, see $DIR/qemu.log"; rc=1; }; else power_off; fi ;;
                reset) if qemu_pid > /dev/null; then power_off; power_on || rc=1; fi ;;
                shutdown) soft_off || rc=1 ;;
                boot) echo "$2" > "$DIR/bootdev" ;;
                identify) ;;
                *) echo "unsupported set $1"; rc=1 ;;
            esac
            shift 2
        done ;;
    *) echo "unknown operation $OP"; rc=1 ;;
esac
[ $rc -eq 0 ] || log "  -> rc=$rc"
exit $rc
