#!/bin/sh
# /init of the e2e test ramdisk: a minimal stand-in for ironic-python-agent
# (ipa-protocol.md §5). It looks itself up, serves the agent command API on port
# 9999 (busybox httpd, agent-api.sh), then heartbeats until a command powers it
# off. An inspection boot (ipa-inspection-callback-url=) instead posts its
# inventory (ramdisk-inventory.sh) and waits to be powered off. Booted from virtual
# media (boot_method=vmedia), it configures its network from the CD's config drive
# (openstack/latest/network_data.json, network-data.sh) when the CD has one, and DHCP
# only otherwise; a token on its command line (ipa-agent-token=) is the one it uses. Lines starting with E2E- are the markers the harness waits for on the
# serial console.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null

API_VERSION_HEADER="X-OpenStack-Ironic-API-Version: 1.82"

uptime_s() { cut -d' ' -f1 /proc/uptime; }

finish() {
  echo "$1"
  echo "E2E-POWEROFF up=$(uptime_s)"
  # userspace console output sits in the UART buffer; give it time to drain
  sleep 0.3
  poweroff -f
}

json_string() { # $1 = key; reads one-line JSON on stdin; prints the first string value of key
  grep -o "\"$1\"[[:space:]]*:[[:space:]]*\"[^\"]*\"" | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/'
}

echo "E2E-RAMDISK up up=$(uptime_s)"

for module in $(cat /lib/modules/load-order); do
  insmod "/lib/modules/$module.ko" || echo "E2E-WARN insmod $module failed"
done

API_URL=
BOOTIF=
ADVERTISE_HOST=
ADVERTISE_PORT=9999
INSPECTION_URL=
PRESET_TOKEN=
BOOT_METHOD=
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    ipa-api-url=*) API_URL=${arg#ipa-api-url=} ;;
    BOOTIF=*) BOOTIF=${arg#BOOTIF=} ;;
    ipa-advertise-host=*) ADVERTISE_HOST=${arg#ipa-advertise-host=} ;;
    ipa-advertise-port=*) ADVERTISE_PORT=${arg#ipa-advertise-port=} ;;
    ipa-inspection-callback-url=*) INSPECTION_URL=${arg#ipa-inspection-callback-url=} ;;
    ipa-agent-token=*) PRESET_TOKEN=${arg#ipa-agent-token=} ;;
    boot_method=*) BOOT_METHOD=${arg#boot_method=} ;;
  esac
done
API_URL=${API_URL%/}
# BOOTIF is either PXELINUX style (01-aa-bb-cc-dd-ee-ff) or a plain MAC
BOOTIF=$(echo "$BOOTIF" | tr 'A-F-' 'a-f:')
case "$BOOTIF" in 01:??:??:??:??:??:??) BOOTIF=${BOOTIF#01:} ;; esac
[ -n "$API_URL" ] || finish "E2E-FAILED no ipa-api-url= on the kernel command line"

waited=0
while ! ls /sys/class/net | grep -q '^eth'; do
  [ $waited -ge 100 ] && finish "E2E-FAILED no ethernet interface appeared"
  sleep 0.1
  waited=$((waited + 1))
done

ip link set lo up
IFACES=
MACS=
for dev in /sys/class/net/eth*; do
  iface=${dev##*/}
  ip link set "$iface" up
  IFACES="$IFACES $iface"
  MACS="$MACS${MACS:+,}$(cat "$dev/address")"
done
echo "E2E-NICS macs=$MACS bootif=$BOOTIF"

# Virtual media: the CD the machine booted may carry network_data (volume config-2), as the
# deploy ISO does on a network without DHCP.
STATIC=
if [ "$BOOT_METHOD" = vmedia ]; then
  waited=0
  while [ ! -b /dev/sr0 ] && [ $waited -lt 50 ]; do sleep 0.1; waited=$((waited + 1)); done
  mkdir -p /mnt/cd
  if mount -t iso9660 -o ro /dev/sr0 /mnt/cd 2>/dev/null; then
    if [ -f /mnt/cd/openstack/latest/network_data.json ]; then
      /bin/network-data /mnt/cd/openstack/latest/network_data.json && STATIC=yes
    fi
    umount /mnt/cd
  else
    echo "E2E-WARN vmedia boot but no CD to read"
  fi
fi

if [ -z "$STATIC" ]; then
  for iface in $IFACES; do
    udhcpc -i "$iface" -f -q -n -t 5 -T 1 -s /etc/udhcpc.script >"/tmp/udhcpc.$iface.log" 2>&1 &
  done
  wait
fi

# the address for the callback URL: the BOOTIF interface's, else the first leased one
MY_IP=
for iface in $IFACES; do
  [ -f "/tmp/ip.$iface" ] || continue
  if [ -z "$MY_IP" ] || [ "$(cat "/sys/class/net/$iface/address")" = "$BOOTIF" ]; then
    MY_IP=$(cat "/tmp/ip.$iface")
    MY_IFACE=$iface
  fi
done
if [ -n "$STATIC" ]; then
  [ -n "$MY_IP" ] || finish "E2E-FAILED network_data configured no address on$IFACES"
  echo "E2E-STATIC ok iface=$MY_IFACE ip=$MY_IP up=$(uptime_s)"
else
  [ -n "$MY_IP" ] || finish "E2E-FAILED dhcp: no lease on$IFACES"
  echo "E2E-DHCP ok iface=$MY_IFACE ip=$MY_IP up=$(uptime_s)"
fi

# Inspection boot: post the inventory (ramdisk-inventory), then wait to be powered off.
if [ -n "$INSPECTION_URL" ]; then
  /bin/ramdisk-inventory "$BOOTIF" >/tmp/inventory.json
  # Printed first: the conductor may power the machine off before a later line leaves the UART.
  echo "E2E-INSPECTION posting to=$INSPECTION_URL up=$(uptime_s)"
  wget -S -O /tmp/inspection.out --header "Content-Type: application/json" --post-file /tmp/inventory.json \
    "$INSPECTION_URL" 2>/tmp/inspection.err
  STATUS=$(grep -o 'HTTP/[0-9.]* [0-9]*' /tmp/inspection.err | tail -n 1 | sed 's/.* //')
  echo "E2E-INSPECTION status=${STATUS:-none} node=$(json_string uuid </tmp/inspection.out) up=$(uptime_s)"
  sleep 600
  finish "E2E-INSPECTION not powered off"
fi

attempt=1
until wget -q -O /tmp/lookup.json --header "$API_VERSION_HEADER" "$API_URL/v1/lookup?addresses=$MACS"; do
  [ $attempt -ge 5 ] && finish "E2E-LOOKUP failed attempts=$attempt url=$API_URL/v1/lookup"
  echo "E2E-LOOKUP retry attempt=$attempt"
  attempt=$((attempt + 1))
  sleep 1
done
LOOKUP=$(tr -d '\r\n' </tmp/lookup.json)
NODE_PART=${LOOKUP#*\"node\"}
NODE_UUID=$(echo "$NODE_PART" | json_string uuid)
AGENT_TOKEN=$(echo "$LOOKUP" | json_string agent_token)
# A token given on the command line was issued for this boot before it started: lookups answer "******".
[ -n "$PRESET_TOKEN" ] && AGENT_TOKEN=$PRESET_TOKEN
HEARTBEAT_TIMEOUT=$(echo "$LOOKUP" | grep -o '"heartbeat_timeout"[[:space:]]*:[[:space:]]*[0-9]*' | head -n 1 | sed 's/.*[^0-9]//')
[ -n "$NODE_UUID" ] && [ -n "$AGENT_TOKEN" ] || finish "E2E-LOOKUP failed unparsable answer: $LOOKUP"
echo "E2E-LOOKUP ok node=$NODE_UUID heartbeat_timeout=$HEARTBEAT_TIMEOUT attempts=$attempt up=$(uptime_s)"

case "$AGENT_TOKEN" in
  # Someone else got this boot's token: IPA stops its API and takes its NICs down.
  '******') finish "E2E-LOOKUP token already issued to another caller: locking down" ;;
esac

# The agent: state for the command API and heartbeats, then the API on the wildcard address.
mkdir -p /run/agent/commands /www/v1/commands
echo "$API_URL" >/run/agent/api_url
echo "$NODE_UUID" >/run/agent/node_uuid
echo "$AGENT_TOKEN" >/run/agent/token
echo "http://${ADVERTISE_HOST:-$MY_IP}:$ADVERTISE_PORT" >/run/agent/callback_url
httpd -p 9999 -h /www || finish "E2E-FAILED the agent API did not start"
echo "E2E-AGENT listening port=9999 callback=$(cat /run/agent/callback_url) up=$(uptime_s)"

# Heartbeats every 30% of heartbeat_timeout (and at once after each async command, from agent-command).
INTERVAL=$(((${HEARTBEAT_TIMEOUT:-300} * 3 + 9) / 10))
while true; do
  /bin/agent-heartbeat
  sleep "$INTERVAL"
done
