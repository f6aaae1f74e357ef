#!/bin/sh
# The e2e test ramdisk's agent command API: busybox httpd runs this as the CGI of
# /v1/commands/ (its directory index). Only what ipa-protocol.md §2 and §5 name:
#   GET  /v1/commands/?agent_token=T            -> {"commands": [result, ...]}, oldest first
#   POST /v1/commands/?wait=..&agent_token=T    -> {"name": "<ext>.<cmd>", "params": {...}} -> result
# Wrong token 401, a new command while the last one runs 409, unknown command 400,
# each with a JSON faultstring. Async commands answer RUNNING and go on in the
# background (agent-command.sh), which rewrites their result file when done.
STATE=/run/agent
COMMANDS=$STATE/commands

reply() { # $1 = status line, $2 = JSON body
  printf 'Status: %s\r\nContent-Type: application/json\r\n\r\n%s\n' "$1" "$2"
  exit 0
}
fault() { reply "$1" "{\"faultcode\": \"$2\", \"faultstring\": \"$3\"}"; }
param() { echo "&$QUERY_STRING" | sed -n "s/.*&$1=\([^&]*\).*/\1/p"; }

[ "$(param agent_token)" = "$(cat $STATE/token)" ] || fault '401 Unauthorized' Client 'Token invalid.'

if [ "$REQUEST_METHOD" = GET ]; then
  list=
  # Only the results (*.json): a result being rewritten is a .new file until its mv.
  for file in $(ls "$COMMANDS" | grep '\.json$' | sort); do list="$list${list:+, }$(cat "$COMMANDS/$file")"; done
  reply '200 OK' "{\"commands\": [$list]}"
fi
[ "$REQUEST_METHOD" = POST ] || fault '405 Method Not Allowed' Client 'GET or POST only'

BODY=/tmp/request.$$
head -c "${CONTENT_LENGTH:-0}" >"$BODY"
# JSON.stringify({name, params}) puts the command name first
NAME=$(sed -n 's/^{"name":"\([^"]*\)".*/\1/p' "$BODY")
[ -n "$NAME" ] || { rm -f "$BODY"; fault '400 Bad Request' Client 'Missing name or params'; }
SHORT=${NAME#*.}

LAST=$(ls "$COMMANDS" | grep '\.json$' | sort | tail -n 1)
if [ -n "$LAST" ] && grep -q '"command_status": "RUNNING"' "$COMMANDS/$LAST"; then
  rm -f "$BODY"
  fault '409 Conflict' Client "Agent is busy: executing command $(sed -n 's/.*"command_name": "\([^"]*\)".*/\1/p' "$COMMANDS/$LAST")"
fi

case "$NAME" in
  deploy.get_deploy_steps | deploy.execute_deploy_step | standby.get_partition_uuids | standby.power_off | \
    standby.sync | clean.get_clean_steps | clean.execute_clean_step) ;;
  *) rm -f "$BODY"; fault '400 Bad Request' Client "Invalid command: Unknown command: $NAME" ;;
esac

ID=$(cat /proc/sys/kernel/random/uuid)
SEQ=$(printf '%04d' $(($(ls "$COMMANDS" | grep -c '\.json$') + 1)))
FILE=$COMMANDS/$SEQ.json
# Written beside and moved into place: a list running at the same time never reads it half written.
echo "{\"id\": \"$ID\", \"command_name\": \"$SHORT\", \"command_status\": \"RUNNING\", \"command_error\": null, \"command_result\": null}" >"$FILE.new"
mv "$FILE.new" "$FILE"
echo "E2E-AGENT command=$NAME seq=$SEQ" >/dev/console

# Sync commands run inside the request; async ones in the background, their result file rewritten when done.
case "$NAME" in
  deploy.execute_deploy_step | clean.execute_clean_step | standby.power_off)
    setsid /bin/agent-command "$NAME" "$FILE" "$BODY" </dev/null >/dev/console 2>&1 &
    reply '200 OK' "$(cat "$FILE")"
    ;;
  *)
    /bin/agent-command "$NAME" "$FILE" "$BODY" </dev/null >/dev/console 2>&1
    reply '200 OK' "$(cat "$FILE")"
    ;;
esac
