#!/bin/sh
# One heartbeat of the e2e test agent (ipa-protocol.md §1.5): POST /v1/heartbeat/<uuid>
# with callback_url, agent_token, agent_version. Retried every 5 s while the API
# answers anything but 202 (409: the node is locked), as IPA does after an error.
# usage: agent-heartbeat [forced]
STATE=/run/agent
API_URL=$(cat $STATE/api_url)
UUID=$(cat $STATE/node_uuid)
BODY="{\"callback_url\": \"$(cat $STATE/callback_url)\", \"agent_token\": \"$(cat $STATE/token)\", \"agent_version\": \"e2e-ramdisk\"}"
ERR=/tmp/heartbeat.$$
attempt=1
while [ $attempt -le 6 ]; do
  wget -S -O /dev/null --header "X-OpenStack-Ironic-API-Version: 1.62" --header "Content-Type: application/json" \
    --post-data "$BODY" "$API_URL/v1/heartbeat/$UUID" 2>"$ERR"
  status=$(grep -o 'HTTP/[0-9.]* [0-9]*' "$ERR" | tail -n 1 | sed 's/.* //')
  if [ "$status" = 202 ]; then
    echo "E2E-HEARTBEAT ok status=202 ${1:-} up=$(cut -d' ' -f1 /proc/uptime)"
    rm -f "$ERR"
    exit 0
  fi
  echo "E2E-HEARTBEAT failed status=${status:-none} attempt=$attempt ${1:-} $(tr '\n' ' ' <"$ERR" | tail -c 200)"
  attempt=$((attempt + 1))
  sleep 5
done
rm -f "$ERR"
exit 1
