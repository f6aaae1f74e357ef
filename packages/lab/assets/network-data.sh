#!/bin/sh
# network-data FILE: configures this machine's network from an OpenStack network_data.json
# (a config drive's openstack/latest/network_data.json), as cloud-init or glean would, for the
# test ramdisk and the instance image: each ipv4 network with a static address on the
# interface whose MAC its link names, its routes (0.0.0.0/0 = the default route) and the DNS
# servers (services of type dns, and dns_nameservers of the networks) in /etc/resolv.conf.
# Prints one E2E-NETWORK line per address; leaves the address in /tmp/ip.<iface>.
# Exit status 0 when it configured at least one address.
[ -r "$1" ] || exit 1

# The document as path=value lines (links.0.ethernet_mac_address=52:54:00:…), by a small
# JSON reader in awk: busybox has no JSON tool.
FLAT=$(awk '
function skip() { while (i <= n && index(" \t\r\n", substr(s, i, 1)) > 0) i++ }
function text(   c, out) {
  i++; out = ""
  while (i <= n) {
    c = substr(s, i, 1)
    if (c == "\\") { c = substr(s, i + 1, 1); if (c == "u") { c = "?"; i += 4 } else if (c == "n") c = " "; out = out c; i += 2; continue }
    if (c == "\"") { i++; return out }
    out = out c; i++
  }
  return out
}
function value(path,   c, key, count) {
  skip(); c = substr(s, i, 1)
  if (c == "{") {
    i++; skip(); if (substr(s, i, 1) == "}") { i++; return }
    while (i <= n) {
      skip(); key = text(); skip(); i++
      value(path == "" ? key : path "." key)
      skip(); c = substr(s, i, 1); i++
      if (c != ",") return
    }
    return
  }
  if (c == "[") {
    i++; skip(); if (substr(s, i, 1) == "]") { i++; return }
    count = 0
    while (i <= n) {
      value(path "." count); count++
      skip(); c = substr(s, i, 1); i++
      if (c != ",") return
    }
    return
  }
  if (c == "\"") { print path "=" text(); return }
  key = ""
  while (i <= n && index(",}] \t\r\n", substr(s, i, 1)) == 0) { key = key substr(s, i, 1); i++ }
  print path "=" key
}
{ s = s $0 "\n" }
END { n = length(s); i = 1; value("") }
' "$1")

get() { echo "$FLAT" | sed -n "s/^$1=//p" | head -n 1; }
indexes() { echo "$FLAT" | sed -n "s/^$1\.\([0-9][0-9]*\)\..*/\1/p" | sort -un; }

prefix_of() { # dotted netmask -> prefix length
  bits=0
  for octet in $(echo "$1" | tr '.' ' '); do
    case "$octet" in
      255) bits=$((bits + 8)) ;; 254) bits=$((bits + 7)) ;; 252) bits=$((bits + 6)) ;;
      248) bits=$((bits + 5)) ;; 240) bits=$((bits + 4)) ;; 224) bits=$((bits + 3)) ;;
      192) bits=$((bits + 2)) ;; 128) bits=$((bits + 1)) ;;
    esac
  done
  echo "$bits"
}

iface_with_mac() {
  wanted=$(echo "$1" | tr 'A-F' 'a-f')
  for dev in /sys/class/net/*; do
    [ "$(cat "$dev/address" 2>/dev/null)" = "$wanted" ] && { echo "${dev##*/}"; return; }
  done
}

configured=1
DNS=
for j in $(indexes networks); do
  [ "$(get "networks\.$j\.type")" = ipv4 ] || continue
  link=$(get "networks\.$j\.link")
  mac=
  for k in $(indexes links); do
    [ "$(get "links\.$k\.id")" = "$link" ] && mac=$(get "links\.$k\.ethernet_mac_address")
  done
  iface=$(iface_with_mac "$mac")
  [ -n "$iface" ] || { echo "E2E-NETWORK no interface with MAC ${mac:-none} for link ${link:-none}"; continue; }
  address=$(get "networks\.$j\.ip_address")
  case "$address" in
    */*) cidr=$address ;;
    *) cidr="$address/$(prefix_of "$(get "networks\.$j\.netmask")")" ;;
  esac
  ip link set "$iface" up
  ip addr add "$cidr" dev "$iface" || continue
  gateway=
  for r in $(indexes "networks\.$j\.routes"); do
    network=$(get "networks\.$j\.routes\.$r\.network")
    via=$(get "networks\.$j\.routes\.$r\.gateway")
    if [ "$network" = 0.0.0.0 ]; then
      ip route replace default via "$via" dev "$iface" && gateway=$via
    else
      ip route replace "$network/$(prefix_of "$(get "networks\.$j\.routes\.$r\.netmask")")" via "$via" dev "$iface"
    fi
  done
  for d in $(indexes "networks\.$j\.dns_nameservers"); do DNS="$DNS $(get "networks\.$j\.dns_nameservers\.$d")"; done
  echo "${cidr%/*}" >"/tmp/ip.$iface"
  echo "E2E-NETWORK static iface=$iface ip=$cidr gateway=${gateway:-none}"
  configured=0
done
for k in $(indexes services); do
  [ "$(get "services\.$k\.type")" = dns ] && DNS="$DNS $(get "services\.$k\.address")"
done
if [ -n "$DNS" ]; then
  : >/etc/resolv.conf
  for server in $DNS; do echo "nameserver $server" >>/etc/resolv.conf; done
  echo "E2E-NETWORK dns=$(echo $DNS | tr ' ' ',')"
fi
exit $configured
