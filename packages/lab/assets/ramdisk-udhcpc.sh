#!/bin/sh
# udhcpc hook of the e2e test ramdisk: apply the lease and leave the address for /init.
case "$1" in
  deconfig)
    ip addr flush dev "$interface"
    ip link set "$interface" up
    ;;
  bound | renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -n "$router" ] && ip route replace default via "${router%% *}" dev "$interface"
    echo "$ip" >"/tmp/ip.$interface"
    ;;
esac
exit 0
