#!/bin/bash
# The part of the official postgres image's entrypoint that docker-compose.yml relies on,
# for the test stand-in image (Debian's postgresql-15; see build.sh): on an empty
# PGDATA, initdb with POSTGRES_USER as the superuser and POSTGRES_PASSWORD (scram), then
# create POSTGRES_DB when it is not "postgres"; then run the server, listening on every
# address, as the postgres user. Data lives in PGDATA, the volume the compose file mounts.
set -euo pipefail
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_PASSWORD:?the official image refuses to start without POSTGRES_PASSWORD; so does this stand-in}"
export PGDATA=${PGDATA:-/var/lib/postgresql/data}
BIN=/usr/lib/postgresql/15/bin
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  "$BIN/initdb" --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    "$BIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    "$BIN/psql" -v ON_ERROR_STOP=1 --username="$POSTGRES_USER" --dbname=postgres \
      -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
    "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
  fi
  echo "stand-in postgres: initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
