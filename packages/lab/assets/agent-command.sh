#!/bin/sh
# Runs one agent command for agent-api.sh and writes its result object.
# usage: agent-command NAME RESULT_FILE REQUEST_BODY_FILE
# Commands (ipa-protocol.md §2.6 and §5.6): deploy.get_deploy_steps,
# deploy.execute_deploy_step (write_image: raw streamed to the disk and read back, qcow2
# converted by qemu-img, anything else refused; the hash verified; config drive partition),
# standby.get_partition_uuids, standby.power_off, standby.sync, clean.get_clean_steps,
# clean.execute_clean_step (erase_devices_metadata).
NAME=$1
FILE=$2
BODY=$3
DISK=/dev/vda
# the ramdisk carries it at the host's path (ramdisk.ts), which the agent's PATH need not name
QEMU_IMG=/usr/bin/qemu-img
MANAGER='"E2eHardwareManager"'
SHORT=${NAME#*.}
ID=$(sed -n 's/.*"id": "\([^"]*\)".*/\1/p' "$FILE")

uptime_s() { cut -d' ' -f1 /proc/uptime; }
log() { echo "E2E-AGENT $* up=$(uptime_s)"; }
# first string value of "key" in the request (the step comes before the node in params)
field() { grep -o "\"$1\":\"[^\"]*\"" "$BODY" | head -n 1 | sed 's/.*:"\(.*\)"$/\1/'; }
# Control characters (a tool's \r progress lines, tabs) are not allowed raw in a JSON string.
json_escape() { sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n\r\t' '   ' | tr -d '\000-\037'; }

result() { # $1 = status, $2 = result JSON, $3 = error message (FAILED)
  error=null
  [ -n "$3" ] && error="{\"type\": \"CommandExecutionError\", \"code\": 500, \"message\": \"$(echo "$3" | json_escape)\", \"details\": \"\"}"
  echo "{\"id\": \"$ID\", \"command_name\": \"$SHORT\", \"command_status\": \"$1\", \"command_error\": $error, \"command_result\": $2}" >"$FILE.new"
  mv "$FILE.new" "$FILE"
  log "command=$NAME status=$1${3:+ error=$3}"
}

# An async command finished: tell the conductor now (IPA's forced heartbeat), in the background.
finished() {
  result "$@"
  rm -f "$BODY"
  /bin/agent-heartbeat forced </dev/null >/dev/console 2>&1 &
  exit 0
}

# The config drive: a new primary partition over the last 64 MiB of the disk, the ISO dd'ed into it.
write_configdrive() {
  encoded=$(grep -o '"configdrive":"[^"]*"' "$BODY" | head -n 1 | sed 's/.*:"\(.*\)"$/\1/')
  [ -n "$encoded" ] || return 0
  case "$encoded" in
    *://*) wget -q -O /tmp/configdrive.gz "$encoded" || return 1 ;;
    *) echo "$encoded" | base64 -d >/tmp/configdrive.gz || return 1 ;;
  esac
  gunzip -c /tmp/configdrive.gz >/tmp/configdrive.iso || return 1
  sectors=$(cat /sys/block/vda/size)
  start=$(((sectors - 64 * 2048) / 2048 * 2048))
  blockdev --rereadpt $DISK 2>/dev/null
  part=1
  while [ -e "$DISK$part" ]; do part=$((part + 1)); done
  printf 'n\np\n%s\n%s\n\nw\n' "$part" "$start" | fdisk -u $DISK >/tmp/fdisk.log 2>&1
  blockdev --rereadpt $DISK 2>/dev/null
  i=0
  while [ ! -b "$DISK$part" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  [ -b "$DISK$part" ] || return 1
  dd if=/tmp/configdrive.iso of="$DISK$part" bs=64k conv=fsync 2>/dev/null || return 1
  log "configdrive partition=$DISK$part start=$start label=$(findfs LABEL=config-2)"
}

# The format whose magic the first bytes of a file or disk carry (raw when none); what the disk holds after a write.
magic_format() {
  case $(head -c 8 "$1" | od -An -tx1 | tr -d ' \n') in
    514649fb*) echo qcow2 ;;
    51454400*) echo qed ;;
    4b444d56*) echo vmdk ;;
    636f6e6563746978) echo vhd ;;
    7668647866696c65) echo vhdx ;;
    4c554b53babe*) echo luks ;;
    *) echo raw ;;
  esac
}

# raw: HTTP -> disk, hashing and counting on the way (the image never sits in RAM); a connection
# that fails before an HTTP answer is tried again, as IPA retries downloads. Sets got and bytes.
stream_raw() {
  attempt=1
  while :; do
    rm -f /tmp/download.failed /tmp/count
    mkfifo /tmp/count
    wc -c </tmp/count >/tmp/bytes &
    got=$({ wget -q -O - "$url" 2>/tmp/download.err || echo "$?" >/tmp/download.failed; } | tee $DISK /tmp/count | "${algo}sum" | cut -d' ' -f1)
    wait
    [ -f /tmp/download.failed ] && ! grep -q 'server returned error' /tmp/download.err && [ $attempt -lt 3 ] || break
    log "download attempt $attempt failed: $(cat /tmp/download.err), retrying"
    attempt=$((attempt + 1))
    sleep 2
  done
  bytes=$(tr -d ' ' </tmp/bytes)
  sync
  [ -f /tmp/download.failed ] && finished FAILED null "Image download failed. URL: $url; Error: $(cat /tmp/download.err)"
  verify_hash
  written=$(magic_format $DISK)
  if [ "$written" != raw ]; then
    # a header on the disk is not a disk the machine can boot: wipe it rather than leave it looking deployed
    dd if=/dev/zero of=$DISK bs=1M count=1 conv=fsync 2>/dev/null
    finished FAILED null "Image declared raw is $written: it cannot be written byte for byte (declare its real format)"
  fi
  # read back what the disk holds: the bytes written must hash as the image did
  echo 3 >/proc/sys/vm/drop_caches
  back=$(head -c "$bytes" $DISK | "${algo}sum" | cut -d' ' -f1)
  [ "$back" = "$want" ] || finished FAILED null "The disk does not hold the image after writing: read back $algo $back, expected $want"
}

# qcow2: downloaded into RAM (qcow2 cannot be piped), checked by qemu-img, converted to raw onto the disk.
convert_qcow2() {
  [ -x $QEMU_IMG ] || finished FAILED null "Image format qcow2 needs qemu-img, which this ramdisk lacks: give a raw image"
  rm -f /tmp/image
  wget -q -O /tmp/image "$url" 2>/tmp/download.err || finished FAILED null "Image download failed. URL: $url; Error: $(cat /tmp/download.err)"
  got=$("${algo}sum" /tmp/image | cut -d' ' -f1)
  bytes=$(wc -c </tmp/image)
  verify_hash
  # -f qcow2: qemu-img never guesses; info opens no backing file
  $QEMU_IMG info --output=json -f qcow2 /tmp/image >/tmp/image.info 2>&1 ||
    finished FAILED null "Image declared qcow2 is not a qcow2 image ($(magic_format /tmp/image)): $(tail -n 1 /tmp/image.info)"
  backing=$(sed -n 's/.*"backing-filename": "\([^"]*\)".*/\1/p' /tmp/image.info)
  [ -z "$backing" ] || finished FAILED null "Image refused: the qcow2 image has a backing file ($backing)"
  grep -q '"data-file"' /tmp/image.info && finished FAILED null "Image refused: the qcow2 image has an external data file"
  bytes=$(sed -n 's/.*"virtual-size": \([0-9]*\).*/\1/p' /tmp/image.info | head -n 1)
  disk=$(($(cat /sys/block/vda/size) * 512))
  [ "$bytes" -le "$disk" ] || finished FAILED null "Image is larger than the disk: $bytes bytes for $disk"
  $QEMU_IMG convert -n -f qcow2 -O raw /tmp/image $DISK >/tmp/convert.log 2>&1 ||
    finished FAILED null "qemu-img could not convert the image onto $DISK: $(tail -n 1 /tmp/convert.log)"
  rm -f /tmp/image
  sync
  written=$(magic_format $DISK)
}

verify_hash() {
  if [ "$got" != "$want" ]; then
    finished FAILED null "Image failed to verify against checksum. location: $url; verification checksum: $want; image checksum: $got"
  fi
}

# Writes raw images, and qcow2 ones only by converting them: anything else fails the step, never a
# disk that cannot boot. The result says what was written, which the conductor checks.
write_image() {
  url=$(grep -o '"urls":\["[^"]*"' "$BODY" | head -n 1 | sed 's/.*\["//; s/"$//')
  format=$(field disk_format)
  algo=$(field os_hash_algo)
  want=$(field os_hash_value)
  if [ -z "$want" ]; then
    want=$(field checksum)
    case ${#want} in 32) algo=md5 ;; 64) algo=sha256 ;; 128) algo=sha512 ;; esac
  fi
  case "$algo" in
    md5 | sha256 | sha512) ;;
    *) finished FAILED null "Image verification failed: unsupported hash algorithm '$algo'" ;;
  esac
  [ -b $DISK ] || finished FAILED null "No suitable device was found for deployment: $DISK missing"
  log "write_image url=$url format=${format:-raw} algo=$algo"
  case "${format:-raw}" in
    raw) stream_raw ;;
    qcow2) convert_qcow2 ;;
    *) finished FAILED null "Image format $format cannot be written by this agent: it writes raw images and converts qcow2 ones" ;;
  esac
  log "image written and verified $algo=$got bytes=$bytes"
  write_configdrive || finished FAILED null "Failed to write the config drive: $(tail -n 3 /tmp/fdisk.log 2>/dev/null)"
  sync
  report="{\"source_format\": \"${format:-raw}\", \"written_format\": \"$written\", \"size\": $bytes, \"os_hash_algo\": \"$algo\", \"os_hash_value\": \"$got\"}"
  finished SUCCEEDED "{\"deploy_result\": {\"image\": $report}, \"deploy_step\": {\"interface\": \"deploy\", \"step\": \"write_image\", \"priority\": 80, \"args\": {}}}"
}

# IPA's erase_devices_metadata: partition tables and signatures at both ends of the disk go.
erase_metadata() {
  sectors=$(cat /sys/block/vda/size)
  dd if=/dev/zero of=$DISK bs=1M count=1 conv=fsync 2>/dev/null || finished FAILED null "erase of the disk start failed"
  dd if=/dev/zero of=$DISK bs=512 seek=$((sectors - 2048)) count=2048 conv=fsync 2>/dev/null ||
    finished FAILED null "erase of the disk end failed"
  log "metadata erased on $DISK"
  finished SUCCEEDED '{"clean_result": null, "clean_step": {"interface": "deploy", "step": "erase_devices_metadata", "priority": 99, "args": {}}}'
}

case "$NAME" in
  deploy.get_deploy_steps)
    result SUCCEEDED "{\"deploy_steps\": {$MANAGER: [{\"interface\": \"deploy\", \"step\": \"write_image\", \"priority\": 0, \"reboot_requested\": false, \"abortable\": false, \"argsinfo\": null}]}, \"hardware_manager_version\": {$MANAGER: \"1\"}}"
    ;;
  clean.get_clean_steps)
    result SUCCEEDED "{\"clean_steps\": {$MANAGER: [{\"interface\": \"deploy\", \"step\": \"erase_devices_metadata\", \"priority\": 99, \"reboot_requested\": false, \"abortable\": true}]}, \"hardware_manager_version\": {$MANAGER: \"1\"}}"
    ;;
  deploy.execute_deploy_step)
    step=$(field step)
    [ "$step" = write_image ] || finished FAILED null "Unknown deploy step $step"
    write_image
    ;;
  clean.execute_clean_step)
    step=$(field step)
    [ "$step" = erase_devices_metadata ] || finished FAILED null "Unknown clean step $step"
    erase_metadata
    ;;
  standby.get_partition_uuids)
    # whole-disk image: the MBR disk identifier stands for the root
    result SUCCEEDED "{\"root uuid\": \"0x$(od -An -tx4 -j440 -N4 $DISK | tr -d ' ')\"}"
    ;;
  standby.sync)
    sync
    result SUCCEEDED null
    ;;
  standby.power_off)
    sync
    echo "E2E-POWEROFF by standby.power_off up=$(uptime_s)"
    sleep 0.5
    poweroff -f
    ;;
esac
rm -f "$BODY"
