import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { procStatFields } from '@bmaas/stack';

/** Clock ticks per second of /proc/<pid>/stat times (100 on practically every Linux). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU seconds the process has used so far; undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  const fields = procStatFields(pid);
  // After the name: state(0) ppid(1) … utime(11) stime(12).
  if (!fields) return undefined;
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Resident set size in kB (VmRSS of /proc/<pid>/status); undefined once it is gone. */
export function rssKilobytes(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Parent → children of every process, read from /proc once (then reused
 * for `maxAgeMs`): sampling several groups must not scan /proc for each.
 */
export class ProcessTable {
  private children = new Map<number, number[]>();
  private readAt = -Infinity;

  constructor(private readonly maxAgeMs = 150) {}

  /** PIDs whose parent is `ppid` (e.g. PostgreSQL backends, nginx's worker). */
  childrenOf(ppid: number): number[] {
    if (performance.now() - this.readAt > this.maxAgeMs) this.refresh();
    return this.children.get(ppid) ?? [];
  }

  /** `pid` and its children (the PostgreSQL server and its backends); none when there is no such process. */
  withChildren(pid: number | null | undefined): number[] {
    return pid ? [pid, ...this.childrenOf(pid)] : [];
  }

  private refresh(): void {
    const children = new Map<number, number[]>();
    for (const entry of readdirSync('/proc')) {
      if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
      const fields = procStatFields(Number(entry));
      if (!fields) continue;
      const ppid = Number(fields[1]);
      const list = children.get(ppid);
      if (list) list.push(Number(entry));
      else children.set(ppid, [Number(entry)]);
    }
    this.children = children;
    this.readAt = performance.now();
  }
}

/** What a process group used during one measured interval. */
export interface ResourceUse {
  cpuSeconds: number;
  /** Highest sum of the group's VmRSS seen, in MiB. */
  peakRssMb: number;
}

interface PidTrack {
  first: number;
  last: number;
}

/**
 * Samples named groups of processes (a group: one PID, or a server with its
 * workers) during a load run: CPU seconds used between start and stop, and
 * the peak RSS. A PID that appears meanwhile counts from zero; one that
 * exits keeps its last sample.
 */
export class ResourceMonitor {
  private readonly tracks = new Map<string, Map<number, PidTrack>>();
  private readonly peaks = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly groups: ReadonlyMap<string, () => number[]>) {}

  start(intervalMs = 500): void {
    this.sample(true);
    this.timer = setInterval(() => this.sample(false), intervalMs);
  }

  stop(): Map<string, ResourceUse> {
    clearInterval(this.timer);
    this.sample(false);
    const result = new Map<string, ResourceUse>();
    for (const [name, pids] of this.tracks) {
      let cpu = 0;
      for (const track of pids.values()) cpu += track.last - track.first;
      result.set(name, { cpuSeconds: Math.round(cpu * 100) / 100, peakRssMb: (this.peaks.get(name) ?? 0) / 1024 });
    }
    return result;
  }

  private sample(initial: boolean): void {
    for (const [name, pidsOf] of this.groups) {
      let pids = this.tracks.get(name);
      if (!pids) {
        pids = new Map();
        this.tracks.set(name, pids);
      }
      let rss = 0;
      for (const pid of pidsOf()) {
        const cpu = cpuSeconds(pid);
        if (cpu === undefined) continue;
        const track = pids.get(pid);
        if (track) track.last = cpu;
        else pids.set(pid, { first: initial ? cpu : 0, last: cpu });
        rss += rssKilobytes(pid) ?? 0;
      }
      this.peaks.set(name, Math.max(this.peaks.get(name) ?? 0, rss));
    }
  }
}
