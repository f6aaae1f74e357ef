// The fleet page: polls the REST API and this API process's boot log, and redraws.
// No framework: a few fetches and DOM writes (textContent only, never HTML from data).

/** The microversion asked for: /v1/conductors and the nodes' `conductor` field appeared in 1.49. */
const API_VERSION = '1.49';
/** Nodes per page of GET /v1/nodes; the API cuts it to its [api]max_limit, paging goes on by marker. */
const PAGE_SIZE = 1000;
const REFRESH_MS = 5000;
const NO_CONDUCTOR = '(no conductor)';

const JSON_HEADERS = { Accept: 'application/json', 'X-OpenStack-Ironic-API-Version': API_VERSION };

async function getJson(path) {
  const response = await fetch(path, { headers: JSON_HEADERS, credentials: 'same-origin', cache: 'no-store' });
  if (!response.ok) throw new Error(`${path.split('?')[0]} answered ${response.status}`);
  return response.json();
}

/** Every item of a paged Ironic collection, following `next` with our own marker (the links may name another host). */
async function allPages(path, key, markerOf) {
  const items = [];
  let marker;
  for (;;) {
    const separator = path.includes('?') ? '&' : '?';
    const page = await getJson(
      `${path}${separator}limit=${PAGE_SIZE}${marker ? `&marker=${encodeURIComponent(marker)}` : ''}`,
    );
    const got = page[key] ?? [];
    items.push(...got);
    if (!page.next || got.length === 0) return items;
    marker = markerOf(got[got.length - 1]);
  }
}

/** Totals of bmaas_boot_config_requests_total by outcome from the API's /metrics, or null when it has none. */
let metricsAvailable = true;
async function bootMetrics() {
  if (!metricsAvailable) return null;
  const response = await fetch('/metrics', { credentials: 'same-origin', cache: 'no-store' });
  const type = response.headers.get('content-type') ?? '';
  if (!response.ok || !type.startsWith('text/plain')) {
    metricsAvailable = false;
    return null;
  }
  const totals = new Map();
  for (const line of (await response.text()).split('\n')) {
    const sample = /^bmaas_boot_config_requests_total\{([^}]*)\}\s+(\S+)/.exec(line);
    if (!sample) continue;
    const outcome = /(?:^|,)\s*outcome="([^"]*)"/.exec(sample[1])?.[1] ?? '?';
    totals.set(outcome, (totals.get(outcome) ?? 0) + Number(sample[2]));
  }
  return totals;
}

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function row(cells, attributes = {}) {
  const tr = document.createElement('tr');
  for (const [name, value] of Object.entries(attributes)) tr.dataset[name] = value;
  tr.append(...cells);
  return tr;
}

function fillBody(table, rows) {
  document.querySelector(`#${table} tbody`).replaceChildren(...rows);
}

function percent(part, whole) {
  return whole === 0 ? '–' : `${((100 * part) / whole).toFixed(1)} %`;
}

function drawConductors(conductors, nodes) {
  const owned = new Map();
  for (const node of nodes) {
    const owner = node.conductor ?? NO_CONDUCTOR;
    owned.set(owner, (owned.get(owner) ?? 0) + 1);
  }
  const rows = conductors
    .slice()
    .sort((a, b) => a.hostname.localeCompare(b.hostname))
    .map((c) => {
      const count = owned.get(c.hostname) ?? 0;
      return row(
        [
          cell(c.hostname, 'mono'),
          cell(c.conductor_group || '(default)'),
          cell(c.alive ? 'alive' : 'down', c.alive ? 'alive' : 'down'),
          cell(String(count), 'number'),
          cell(percent(count, nodes.length), 'number share'),
        ],
        { hostname: c.hostname, alive: String(c.alive) },
      );
    });
  const orphans = owned.get(NO_CONDUCTOR) ?? 0;
  if (orphans > 0) {
    rows.push(
      row(
        [
          cell(NO_CONDUCTOR),
          cell(''),
          cell(''),
          cell(String(orphans), 'number'),
          cell(percent(orphans, nodes.length), 'number share'),
        ],
        { hostname: '' },
      ),
    );
  }
  fillBody('conductors', rows);
}

function drawStates(nodes) {
  const counts = new Map();
  for (const node of nodes) counts.set(node.provision_state, (counts.get(node.provision_state) ?? 0) + 1);
  const rows = [...counts.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([state, count]) => row([cell(state), cell(String(count), 'number count')], { state }));
  fillBody('states', rows);
  document.getElementById('nodes-total').textContent = String(nodes.length);
}

/** served, refused (with the reason the requester never saw) or failed (a 500: server-error). */
function outcomeCell(outcome) {
  if (outcome === 'served') return cell('served', 'served');
  if (outcome === 'server-error') return cell('failed: server-error', 'refused');
  return cell(`refused: ${outcome}`, 'refused');
}

function drawBootRequests(log, metrics) {
  const apiProcess = log.api_process;
  document.getElementById('boot-process').textContent =
    `Kept in memory by the API process that serves this page (${apiProcess.hostname}, pid ${apiProcess.pid}, ` +
    `since ${new Date(apiProcess.started_at).toLocaleString()}): its last ${log.capacity} answers. ` +
    'Requests answered by other API processes are not listed.';
  document.getElementById('boot-totals').textContent =
    `Since then: ${log.total} answered, ${log.served} served, ${log.total - log.served} refused.`;
  const metricsLine = document.getElementById('boot-metrics');
  metricsLine.hidden = metrics === null;
  if (metrics !== null) {
    const parts = [...metrics.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([o, n]) => `${o} ${n}`);
    metricsLine.textContent = `bmaas_boot_config_requests_total (/metrics): ${parts.join(', ') || 'none yet'}`;
  }
  const rows = log.boot_requests.map((r) =>
    row(
      [
        cell(new Date(r.time).toLocaleTimeString()),
        outcomeCell(r.outcome),
        cell(r.name ?? '–', 'mono'),
        cell(r.mac ?? '–', 'mono'),
        cell(r.node_uuid ?? '–', 'mono'),
        cell(r.duration_ms.toFixed(1), 'number'),
      ],
      { outcome: r.outcome },
    ),
  );
  fillBody('boot-requests', rows);
}

async function refresh() {
  const status = document.getElementById('status');
  try {
    const [conductors, nodes, log, metrics] = await Promise.all([
      allPages('/v1/conductors', 'conductors', (c) => c.hostname),
      allPages('/v1/nodes?fields=uuid,provision_state,conductor', 'nodes', (n) => n.uuid),
      getJson('/dashboard/boot-requests'),
      bootMetrics().catch(() => null),
    ]);
    drawConductors(conductors, nodes);
    drawStates(nodes);
    drawBootRequests(log, metrics);
    status.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshed every ${REFRESH_MS / 1000} s.`;
    status.classList.remove('error');
  } catch (error) {
    status.textContent = `Refresh failed (${error.message}); retrying in ${REFRESH_MS / 1000} s.`;
    status.classList.add('error');
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

refresh();
