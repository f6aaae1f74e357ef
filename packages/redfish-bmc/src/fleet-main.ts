#!/usr/bin/env node
// The simulated BMC fleet as a process of its own (its CPU and memory are not the measured
// conductor's): `node fleet-main.js --count N [...]`. Once every BMC listens it prints one JSON
// line on stdout (port, account, system path, first address, control URL; the password is
// REDFISH_FLEET_PASSWORD when set, else random); the control server
// answers GET /stats[?since=<ms since the epoch>][&count=<first BMCs>] with the fleet's FleetStats. SIGTERM stops it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RedfishFleetOptions, startRedfishFleet } from './fleet.js';
import { parseFleetOptions } from './fleet-options.js';

async function main(): Promise<void> {
  let options: RedfishFleetOptions;
  try {
    options = parseFleetOptions(process.argv.slice(2));
    // The account's password, when given, comes through the environment (never an argument).
    const password = process.env.REDFISH_FLEET_PASSWORD;
    if (password) options = { ...options, password };
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(2);
  }
  const fleet = await startRedfishFleet(options);
  const control = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://control');
    if (req.method !== 'GET' || url.pathname !== '/stats') {
      res.writeHead(404).end();
      return;
    }
    const since = url.searchParams.get('since');
    const count = url.searchParams.get('count');
    const text = JSON.stringify(
      fleet.stats(since === null ? undefined : Number(since), count === null ? undefined : Number(count)),
    );
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
  });
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
  const ready = {
    count: fleet.bmcs.length,
    firstAddress: fleet.bmcs[0]?.address,
    port: fleet.port,
    username: fleet.username,
    password: fleet.password,
    systemPath: fleet.systemPath,
    control: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
  };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      control.closeAllConnections();
      control.close();
      void fleet.close().then(() => process.exit(0));
    });
  }
}

void main();
