// Failpoints for crash tests: CROSSTALK_FAILPOINTS=name,… kills the process hard (SIGKILL) at that named point.
const active = new Set((process.env.CROSSTALK_FAILPOINTS ?? '').split(',').filter(Boolean));

export function failpoint(name: string): void {
  if (active.has(name)) process.kill(process.pid, 'SIGKILL');
}
