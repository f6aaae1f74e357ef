#!/bin/sh
# Inventory collector of the e2e test ramdisk: prints, on stdout, the JSON body
# an inspection ramdisk posts to /v1/continue_inspection, read from /proc and
# /sys in the shape ironic-python-agent gives (docs/inspection.md).
# Usage: ramdisk-inventory <BOOTIF mac>
BOOTIF=$1

# A JSON string of $1 (sysfs values hold no control characters), or null when empty.
str() {
  if [ -z "$1" ]; then echo null; return; fi
  printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"
}
read_file() { [ -r "$1" ] && tr -d '\n' <"$1" | sed 's/[[:space:]]*$//'; }

interfaces() {
  sep=
  for dev in /sys/class/net/*; do
    name=${dev##*/}
    [ "$name" = lo ] && continue
    mac=$(read_file "$dev/address")
    ip=$(read_file "/tmp/ip.$name")
    carrier=false
    [ "$(read_file "$dev/carrier" 2>/dev/null)" = 1 ] && carrier=true
    driver=$(basename "$(readlink "$dev/device/driver" 2>/dev/null)" 2>/dev/null)
    printf '%s{"name": %s, "mac_address": %s, "ipv4_address": %s, "ipv6_address": null, "has_carrier": %s, "driver": %s}' \
      "$sep" "$(str "$name")" "$(str "$mac")" "$(str "$ip")" "$carrier" "$(str "$driver")"
    sep=', '
  done
}

# The PCI address a block device hangs off, as udev's by-path name would carry it.
by_path() {
  pci=$(readlink -f "/sys/block/$1/device" | grep -o '[0-9a-f]\{4\}:[0-9a-f]\{2\}:[0-9a-f]\{2\}\.[0-9a-f]' | tail -n 1)
  [ -n "$pci" ] && echo "/dev/disk/by-path/pci-$pci"
}

disks() {
  sep=
  for dev in /sys/block/*; do
    name=${dev##*/}
    [ -e "$dev/device" ] || continue # loop, ram, … have no device
    sectors=$(read_file "$dev/size")
    rotational=true
    [ "$(read_file "$dev/queue/rotational")" = 0 ] && rotational=false
    serial=$(read_file "$dev/serial")
    [ -n "$serial" ] || serial=$(read_file "$dev/device/serial")
    printf '%s{"name": %s, "size": %s, "rotational": %s, "model": %s, "vendor": %s, "serial": %s, "wwn": %s, "by_path": %s}' \
      "$sep" "$(str "/dev/$name")" "$((sectors * 512))" "$rotational" "$(str "$(read_file "$dev/device/model")")" \
      "$(str "$(read_file "$dev/device/vendor")")" "$(str "$serial")" "$(str "$(read_file "$dev/device/wwid")")" \
      "$(str "$(by_path "$name")")"
    sep=', '
  done
}

# Memory the machine has: the online memory blocks (what the hypervisor gave), else MemTotal.
physical_mb() {
  block=$(read_file /sys/devices/system/memory/block_size_bytes)
  if [ -n "$block" ]; then
    count=$(cat /sys/devices/system/memory/memory*/online 2>/dev/null | grep -c 1)
    echo $(((0x$block * count) / 1048576))
  else
    echo $(($(grep MemTotal /proc/meminfo | tr -s ' ' | cut -d' ' -f2) / 1024))
  fi
}

cpus=$(grep -c '^processor' /proc/cpuinfo)
model=$(grep -m 1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')
total=$(($(grep MemTotal /proc/meminfo | tr -s ' ' | cut -d' ' -f2) * 1024))
mode=bios
[ -d /sys/firmware/efi ] && mode=uefi
dmi=/sys/class/dmi/id

cat <<JSON
{"inventory": {"interfaces": [$(interfaces)],
 "cpu": {"count": $cpus, "architecture": $(str "$(uname -m)"), "model_name": $(str "$model")},
 "memory": {"total": $total, "physical_mb": $(physical_mb)},
 "disks": [$(disks)],
 "boot": {"current_boot_mode": "$mode", "pxe_interface": $(str "$BOOTIF")},
 "system_vendor": {"product_name": $(str "$(read_file $dmi/product_name)"), "serial_number": $(str "$(read_file $dmi/product_serial)"), "manufacturer": $(str "$(read_file $dmi/sys_vendor)")},
 "bmc_address": null, "hostname": $(str "$(hostname)")},
 "error": null}
JSON
