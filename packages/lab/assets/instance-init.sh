#!/bin/sh
# /init of the e2e instance image (the "user's OS" the deploy writes to disk).
# It proves it booted from disk: finds its config drive (label config-2), prints
# the node uuid and meta_data it holds on the serial console, reports both to
# meta_data.meta.e2e_report_url (a URL on the test host), then powers off. Given
# nothing to report to, it stays up, as an installed OS would. Its network comes from
# the config drive's network_data.json when it has one (static addresses, as
# cloud-init or glean would set them, network-data.sh), else from DHCP when it reports.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
for module in $(cat /lib/modules/load-order); do insmod "/lib/modules/$module.ko" 2>/dev/null; done
uptime_s() { cut -d' ' -f1 /proc/uptime; }
echo "INSTANCE-UP from disk up=$(uptime_s)"

i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
CD=$(findfs LABEL=config-2 2>/dev/null)
META=
STATIC=
if [ -n "$CD" ] && mount -t iso9660 -o ro "$CD" /mnt 2>/dev/null; then
  META=$(tr -d '\n' </mnt/openstack/latest/meta_data.json)
  if [ -f /mnt/openstack/latest/network_data.json ]; then
    ip link set lo up
    /bin/network-data /mnt/openstack/latest/network_data.json && STATIC=yes
    for f in /tmp/ip.*; do [ -f "$f" ] && echo "INSTANCE-NETWORK static iface=${f#/tmp/ip.} ip=$(cat "$f")"; done
  fi
fi
UUID=$(echo "$META" | sed -n 's/.*"uuid": *"\([^"]*\)".*/\1/p')
REPORT_URL=$(echo "$META" | sed -n 's/.*"e2e_report_url": *"\([^"]*\)".*/\1/p')
echo "INSTANCE-BOOTED node=${UUID:-none} configdrive=${CD:-none} up=$(uptime_s)"
echo "INSTANCE-METADATA $META"

if [ -n "$REPORT_URL" ]; then
  if [ -z "$STATIC" ]; then
    ip link set lo up
    ip link set eth0 up
    udhcpc -i eth0 -f -q -n -t 10 -T 1 -s /etc/udhcpc.script >/tmp/udhcpc.log 2>&1
  fi
  if wget -q -O /dev/null --header "Content-Type: application/json" --post-data "$META" "$REPORT_URL/$UUID"; then
    echo "INSTANCE-REPORTED ok"
  else
    echo "INSTANCE-REPORTED failed"
  fi
fi
if [ -z "$REPORT_URL" ]; then
  echo "INSTANCE-RUNNING up=$(uptime_s)"
  while :; do sleep 3600; done
fi
echo "INSTANCE-POWEROFF up=$(uptime_s)"
sleep 0.3
poweroff -f
