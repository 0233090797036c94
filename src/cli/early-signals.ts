// Signals that arrive while a long-running command (run, demo) is still loading its modules: importing the
// daemon, the emulator and their dependencies takes a few hundred milliseconds, during which SIGHUP's default
// action would kill the process (exit 129). cli.ts holds them from the start; the command takes them over when
// it wires its own handlers, and decides what a held signal means (demo: stop; run: nothing to reload yet).

const held = new Set<NodeJS.Signals>();
const listeners = new Map<NodeJS.Signals, () => void>();

/** Catches these signals from now on, remembering which arrived, until takeEarlySignals() or releaseEarlySignals(). */
export function holdEarlySignals(signals: readonly NodeJS.Signals[]): void {
  for (const s of signals) {
    if (listeners.has(s)) continue;
    const l = () => held.add(s);
    listeners.set(s, l);
    process.on(s, l);
  }
}

/** Stops holding (call right after installing the real handlers) and returns the signals that arrived. */
export function takeEarlySignals(): ReadonlySet<NodeJS.Signals> {
  const arrived = new Set(held);
  releaseEarlySignals();
  return arrived;
}

/** Stops holding; what arrived is forgotten. */
export function releaseEarlySignals(): void {
  for (const [s, l] of listeners) process.off(s, l);
  listeners.clear();
  held.clear();
}
