// Types of scripts/secrets.mjs (the launcher's secret handoff), for the TypeScript entry points.
import type { ChildProcess, SpawnOptions } from 'node:child_process';

export const SECRETS_FD_VAR: 'CROSSTALK_SECRETS_FD';
export function isSecretName(name: string): boolean;
export function splitSecrets(env: Record<string, string | undefined>): { env: Record<string, string>; secrets: Record<string, string> };
export function receiveSecrets(): boolean;
export function spawnWithSecrets(command: string, args: readonly string[], options?: SpawnOptions & { env?: Record<string, string | undefined>; stdio?: SpawnOptions['stdio'] & unknown[] }): ChildProcess;
export function launchWithoutSecrets(): Promise<void>;
