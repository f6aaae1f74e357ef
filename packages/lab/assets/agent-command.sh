#!/bin/sh
# Runs one agent command for agent-api.sh and writes its result object.
# usage: agent-command NAME RESULT_FILE REQUEST_BODY_FILE
# Commands (ipa-protocol.md §2.6 and §5.6): deploy.get_deploy_steps,
# deploy.execute_deploy_step (write_image: download, verify the hash, dd to the
# disk, config drive partition), standby.get_partition_uuids, standby.power_off,
# standby.sync, clean.get_clean_steps, clean.execute_clean_step (erase_devices_metadata).
NAME=$1
FILE=$2
BODY=$3
DISK=/dev/vda
MANAGER='"E2eHardwareManager"'
SHORT=${NAME#*.}
ID=$(sed -n 's/.*"id": "\([^"]*\)".*/\1/p' "$FILE")

uptime_s() { cut -d' ' -f1 /proc/uptime; }
log() { echo "E2E-AGENT $* up=$(uptime_s)"; }
# first string value of "key" in the request (the step comes before the node in params)
field() { grep -o "\"$1\":\"[^\"]*\"" "$BODY" | head -n 1 | sed 's/.*:"\(.*\)"$/\1/'; }
json_escape() { sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n' ' '; }

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

write_image() {
  url=$(grep -o '"urls":\["[^"]*"' "$BODY" | head -n 1 | sed 's/.*\["//; s/"$//')
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
  log "write_image url=$url algo=$algo"
  # stream: HTTP -> disk, hashing on the way (the image never sits in RAM); a connection that
  # fails before an HTTP answer is tried again, as IPA retries downloads
  attempt=1
  while :; do
    rm -f /tmp/download.failed
    got=$({ wget -q -O - "$url" 2>/tmp/download.err || echo "$?" >/tmp/download.failed; } | tee $DISK | "${algo}sum" | cut -d' ' -f1)
    [ -f /tmp/download.failed ] && ! grep -q 'server returned error' /tmp/download.err && [ $attempt -lt 3 ] || break
    log "download attempt $attempt failed: $(cat /tmp/download.err), retrying"
    attempt=$((attempt + 1))
    sleep 2
  done
  sync
  if [ -f /tmp/download.failed ]; then
    finished FAILED null "Image download failed. URL: $url; Error: $(cat /tmp/download.err)"
  fi
  if [ "$got" != "$want" ]; then
    finished FAILED null "Image failed to verify against checksum. location: $url; verification checksum: $want; image checksum: $got"
  fi
  log "image written and verified $algo=$got"
  write_configdrive || finished FAILED null "Failed to write the config drive: $(tail -n 3 /tmp/fdisk.log 2>/dev/null)"
  sync
  finished SUCCEEDED '{"deploy_result": null, "deploy_step": {"interface": "deploy", "step": "write_image", "priority": 80, "args": {}}}'
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
