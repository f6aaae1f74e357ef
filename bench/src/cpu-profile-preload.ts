// Loaded with `node --import` (through NODE_OPTIONS, which does not allow
// --cpu-prof itself) when $BENCH_CPU_PROFILE_DIR is set. SIGUSR2 starts the
// inspector's CPU profiler; the next SIGUSR2 (or the exit) writes
// <package>-<pid>-<n>.cpuprofile there, so a profile covers just the load.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { basename, dirname, join } from 'node:path';

const dir = process.env.BENCH_CPU_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  const name = basename(dirname(dirname(process.argv[1] ?? 'node')));
  let profiling = false;
  let written = 0;
  // The inspector answers a same-thread session synchronously, so this also works in an exit handler.
  const stopAndWrite = (): void => {
    if (!profiling) return;
    profiling = false;
    session.post('Profiler.stop', (error, result) => {
      if (error) return;
      writeFileSync(join(dir, `${name}-${process.pid}-${++written}.cpuprofile`), JSON.stringify(result.profile));
    });
  };
  process.on('SIGUSR2', () => {
    if (profiling) stopAndWrite();
    else {
      session.post('Profiler.start');
      profiling = true;
    }
  });
  process.on('exit', stopAndWrite);
}
