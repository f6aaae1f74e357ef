#!/bin/bash
# Local stand-ins for the upstream base images docker/Dockerfile and docker-compose.yml
# name, made from Debian's archive, for a machine that reaches the Debian and npm
# registries but no image registry (test/compose runs it). They are test stand-ins:
# bmaas does not ship them, and an operator builds on the upstream images (the defaults).
#
#   bmaas-standin/debian:bookworm-slim    a debootstrap minbase root file system, imported
#   bmaas-standin/node:20-bookworm-slim   that plus this host's Node.js 20 (node, npm, corepack):
#                                         Debian 12's archive has Node.js 18 only
#   bmaas-standin/node:20-bookworm        the slim one plus a C toolchain and python3 (node-gyp)
#   bmaas-standin/postgres:16-bookworm    Debian's postgresql-15 (12 has no 16) with an
#                                         entrypoint honouring the official image's contract:
#                                         POSTGRES_USER/PASSWORD/DB, PGDATA, pg_isready
#
# Each carries this host's CA bundle (and Node is told to use it, NODE_EXTRA_CA_CERTS): a
# machine whose HTTPS goes through an inspecting proxy refuses the npm registry otherwise.
# Cached: every image is labelled with a key of its inputs (this script, the entrypoint, the
# node binary, the CA bundle) and rebuilt only when the key changes; the root file system
# is kept in the work directory. Built with the classic builder (DOCKER_BUILDKIT=0), which
# never asks a registry for a local tag.
#
# usage (root, a running Docker engine): build.sh [WORKDIR]   (default /var/cache/bmaas-standin)
# Prints the build arguments / compose variables that select the stand-ins, one NAME=image a line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-/var/cache/bmaas-standin}
mkdir -p "$W"
export DOCKER_BUILDKIT=0
say() { echo "[standin] $*" >&2; }
NODE_BIN=$(readlink -f "$(command -v node)")
NODE_MODULES=$(dirname "$(dirname "$NODE_BIN")")/lib/node_modules
[ -d "$NODE_MODULES/npm" ] || NODE_MODULES=/usr/lib/node_modules
case "$("$NODE_BIN" --version)" in v20.*) ;; *) say "this host's node is $("$NODE_BIN" --version), the stand-in needs 20"; exit 1 ;; esac
CA=/etc/ssl/certs/ca-certificates.crt
KEY=$(cat "$0" "$HERE/postgres-entrypoint.sh" "$NODE_BIN" "$CA" | sha256sum | cut -c1-16)
LABEL=org.bmaas.standin-key

current() { [ "$(docker image inspect --format "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null)" = "$KEY" ]; }
build() { # build TAG DIR: the Dockerfile on stdin
  say "building $1"
  docker build -q --label "$LABEL=$KEY" -t "$1" -f - "$2" >/dev/null
}

R=$W/rootfs
if ! current bmaas-standin/debian:bookworm-slim; then
  if [ ! -f "$W/rootfs.done" ]; then
    say "debootstrap bookworm (minbase) into $R"
    rm -rf "$R"
    debootstrap --variant=minbase bookworm "$R" http://deb.debian.org/debian >/dev/null
    rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/*
    touch "$W/rootfs.done"
  fi
  # As small as the upstream slim image: what debootstrap installed without its
  # documentation, man and info pages and translations (upstream keeps the copyright files
  # and locale.alias too), and the same for every later apt install (the dpkg excludes
  # below); no package caches left by apt-get update (upstream's docker-clean).
  find "$R/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$R/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$R"/usr/share/man/* "$R"/usr/share/info/* "$R"/usr/share/lintian/*
  find "$R/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  printf '%s\n' 'DPkg::Post-Invoke { "rm -f /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/*.bin || true"; };' \
    'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";' > "$R/etc/apt/apt.conf.d/docker-clean"
  # Keep images small as the upstream slim ones do: no docs, no man pages from apt.
  mkdir -p "$R/etc/dpkg/dpkg.cfg.d"
  printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\npath-include /usr/share/locale/locale.alias\n' \
    > "$R/etc/dpkg/dpkg.cfg.d/excludes"
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' > "$R/etc/apt/apt.conf.d/90standin"
  mkdir -p "$R/etc/ssl/certs" "$R/usr/local/share/ca-certificates"
  cp "$CA" "$R/etc/ssl/certs/ca-certificates.crt"
  # The host's own additions too, so an update-ca-certificates in a later layer keeps them.
  cp -r /usr/local/share/ca-certificates/. "$R/usr/local/share/ca-certificates/" 2>/dev/null || true
  say "importing bmaas-standin/debian:bookworm-slim"
  tar -C "$R" -c . | docker import \
    -c "ENV NODE_EXTRA_CA_CERTS=$CA" -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c "LABEL $LABEL=$KEY" -c 'CMD ["bash"]' - bmaas-standin/debian:bookworm-slim >/dev/null
fi

if ! current bmaas-standin/node:20-bookworm-slim; then
  N=$W/node
  rm -rf "$N"
  mkdir -p "$N/usr/local/bin" "$N/usr/local/lib"
  cp "$NODE_BIN" "$N/usr/local/bin/node"
  cp -r "$NODE_MODULES/npm" "$NODE_MODULES/corepack" "$N/usr/local/lib/" 2>/dev/null || cp -r "$NODE_MODULES/npm" "$N/usr/local/lib/"
  mkdir -p "$N/usr/local/lib/node_modules"
  mv "$N/usr/local/lib/npm" "$N/usr/local/lib/node_modules/"
  [ -d "$N/usr/local/lib/corepack" ] && mv "$N/usr/local/lib/corepack" "$N/usr/local/lib/node_modules/"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$N/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$N/usr/local/bin/npx"
  [ -d "$N/usr/local/lib/node_modules/corepack" ] && ln -s ../lib/node_modules/corepack/dist/corepack.js "$N/usr/local/bin/corepack"
  printf 'FROM bmaas-standin/debian:bookworm-slim\nCOPY usr/ /usr/\nCMD ["node"]\n' | build bmaas-standin/node:20-bookworm-slim "$N"
fi

if ! current bmaas-standin/node:20-bookworm; then
  printf '%s\n' 'FROM bmaas-standin/node:20-bookworm-slim' \
    'RUN apt-get update && apt-get install -y --no-install-recommends gcc g++ libc6-dev make python3 ca-certificates git && rm -rf /var/lib/apt/lists/*' \
    | build bmaas-standin/node:20-bookworm "$W"
fi

if ! current bmaas-standin/postgres:16-bookworm; then
  printf '%s\n' 'FROM bmaas-standin/debian:bookworm-slim' \
    'RUN apt-get update && apt-get install -y --no-install-recommends postgresql-15 && rm -rf /var/lib/apt/lists/*' \
    'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PGDATA=/var/lib/postgresql/data' \
    'COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh' \
    'VOLUME /var/lib/postgresql/data' \
    'STOPSIGNAL SIGINT' \
    'EXPOSE 5432' \
    'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
    | build bmaas-standin/postgres:16-bookworm "$HERE"
fi

echo BMAAS_BUILD_IMAGE=bmaas-standin/node:20-bookworm
echo BMAAS_RUNTIME_BASE_IMAGE=bmaas-standin/node:20-bookworm-slim
echo BMAAS_DEBIAN_IMAGE=bmaas-standin/debian:bookworm-slim
echo POSTGRES_IMAGE=bmaas-standin/postgres:16-bookworm
