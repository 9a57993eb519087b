// Who `exec` runs as: an unprivileged user when the server is root (CONTRACT §5 "exec isolation"), and the start-up steps that make it hold.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { CrosstalkConfig } from '../config';
import type { Logger } from '../logger';
import { pidNamespace, type PidNamespace } from './exec-namespace';
import { systemBinary } from '../system-binary';

/** `exec` as another user (uid/gid), or as the server's own user with the reason it cannot be isolated. */
export type ExecIdentity = { isolated: true; user: string; uid: number; gid: number } | { isolated: false; reason: string };

/** A user's uid and gid from /etc/passwd, else from `getent passwd` (NSS); null when there is no such user. */
export function lookupUser(name: string): { uid: number; gid: number } | null {
  const parse = (text: string) => {
    for (const line of text.split('\n')) {
      const f = line.split(':');
      if (f[0] === name && f.length >= 4 && /^\d+$/.test(f[2]!) && /^\d+$/.test(f[3]!)) return { uid: Number(f[2]), gid: Number(f[3]) };
    }
    return null;
  };
  try {
    const found = parse(fs.readFileSync('/etc/passwd', 'utf8'));
    if (found) return found;
  } catch {
    /* no /etc/passwd: ask NSS */
  }
  const r = spawnSync('getent', ['passwd', name], { encoding: 'utf8', timeout: 5000 });
  return r.status === 0 ? parse(r.stdout) : null;
}

const identities = new Map<string, ExecIdentity>();

/** Who `exec` runs as for an agent whose `exec.user` is `user` (looked up once per name). */
export function execIdentity(user: string): ExecIdentity {
  const known = identities.get(user);
  if (known) return known;
  const uid = process.getuid?.();
  let id: ExecIdentity;
  if (uid !== 0) id = { isolated: false, reason: `the server runs as uid ${uid ?? '?'}, not root, so exec runs as the server's own user` };
  else {
    const u = lookupUser(user);
    if (!u) id = { isolated: false, reason: `there is no user "${user}" (agents[].exec.user), so exec runs as root` };
    else if (u.uid === 0) id = { isolated: false, reason: `exec.user "${user}" is root` };
    else id = { isolated: true, user, ...u };
  }
  identities.set(user, id);
  return id;
}

/** The first directory on the way to `dir` that the user cannot enter (or `dir` itself lacking `last`, rwx by default); null when none. */
export function blockedFor(dir: string, id: { uid: number; gid: number }, last = 7): string | null {
  const real = fs.realpathSync(/* turbopackIgnore: true */ dir);
  const parts = real.split(path.sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const p = path.sep + parts.slice(0, i).join(path.sep);
    const st = fs.statSync(/* turbopackIgnore: true */ p);
    const bits = st.uid === id.uid ? (st.mode >> 6) & 7 : st.gid === id.gid ? (st.mode >> 3) & 7 : st.mode & 7;
    const need = i === parts.length ? last : 1;
    if ((bits & need) !== need) return p;
  }
  return null;
}

/**
 * A workspace folder closed to all but its owner (mode 0700), through an fd opened without following a link: agents
 * with different exec users cannot read each other's workspaces (made 0755, they could).
 */
export function closeToOthers(dir: string): void {
  const fd = fs.openSync(/* turbopackIgnore: true */ dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
  try {
    if ((fs.fstatSync(fd).mode & 0o777) !== 0o700) fs.fchmodSync(fd, 0o700);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * `mkdir -p` whose new directories belong to the exec user (the server, as root, creates them for it), mode 0700: `dir`
 * itself, and a new directory whose parent is the user's already (a folder made inside the workspace). The folders made on
 * the way to a workspace stay root's: the workspaces' root (`./workspaces`) used to become the exec user's, and a
 * command could then swap another agent's workspace for a symlink to any folder root owns, which the next start's
 * hand-over gave to the exec user, all of it (handOverWorkspace now refuses such a link too).
 */
export function mkdirFor(dir: string, id: ExecIdentity): void {
  const target = path.resolve(/* turbopackIgnore: true */ dir);
  const missing: string[] = [];
  for (let d = target; !fs.existsSync(/* turbopackIgnore: true */ d); d = path.dirname(d)) missing.unshift(d);
  fs.mkdirSync(/* turbopackIgnore: true */ dir, { recursive: true });
  for (const d of missing) {
    if (d === target || (id.isolated && fs.lstatSync(/* turbopackIgnore: true */ path.dirname(d)).uid === id.uid)) {
      if (id.isolated) fs.lchownSync(/* turbopackIgnore: true */ d, id.uid, id.gid);
      closeToOthers(d);
    }
  }
}

/**
 * `mkdir -p` of a folder inside a workspace that a command may be changing meanwhile (a delegate's `cwd`), made as the
 * exec user: root following a path the user can rename under it created (and handed over) a folder outside the
 * workspace — a component checked a moment before was swapped for a symlink to a folder of root's between the check
 * and the mkdir, a race a command in another session of the agent won within a few tries. As the user, a swapped
 * component leads only where the user could write anyway. False when it could not be made.
 */
export function mkdirAsUser(dir: string, id: ExecIdentity): boolean {
  if (!id.isolated) {
    fs.mkdirSync(/* turbopackIgnore: true */ dir, { recursive: true });
    return true;
  }
  const r = spawnSync('mkdir', ['-p', '--', dir], { uid: id.uid, gid: id.gid, cwd: '/', env: { PATH: '/usr/bin:/bin' } as unknown as NodeJS.ProcessEnv, stdio: 'ignore', timeout: 5000 });
  return r.status === 0;
}

/**
 * The first symlink on the way to `p` (every component, and the components of each link's target in turn) that root
 * does not own — one a command, as the exec user, may have planted; null when there is none. A link that goes round
 * more than 40 times answers itself (the kernel's ELOOP bound), as untrusted.
 */
export function untrustedLink(p: string): string | null {
  const todo = path.resolve(/* turbopackIgnore: true */ p).split(path.sep).filter(Boolean);
  let at: string = path.sep;
  for (let links = 0; todo.length; ) {
    const next = path.join(/* turbopackIgnore: true */ at, todo.shift()!);
    const st = fs.lstatSync(/* turbopackIgnore: true */ next);
    if (!st.isSymbolicLink()) {
      at = next;
      continue;
    }
    if (st.uid !== 0 || ++links > 40) return next;
    const to = fs.readlinkSync(/* turbopackIgnore: true */ next);
    if (path.isAbsolute(to)) at = path.sep;
    todo.unshift(...to.split(path.sep).filter(Boolean));
  }
  return null;
}

/**
 * Hands an agent's workspace to its exec user, once (while its top folder is not theirs yet): what root owns in
 * it becomes the user's, so commands can edit the files there. Files of other users keep their owner; symlinks
 * are not followed and a file with more than one hard link is left alone (it may be a link to a file outside).
 * Its top folder, once the user's, is made mode 0700 at every start (one made 0755 by an earlier version too).
 */
export function handOverWorkspace(workspace: string, id: Extract<ExecIdentity, { isolated: true }>): void {
  // A link root does not own on the way (a command swapped a workspace for one): never followed into root's files.
  const link = untrustedLink(workspace);
  if (link) throw new Error(`${link} is a symlink that root does not own, on the way to the workspace ${workspace}: not handed to ${id.user} (remove it, or make the workspace a folder)`);
  const root = fs.realpathSync(/* turbopackIgnore: true */ workspace);
  const top = fs.lstatSync(/* turbopackIgnore: true */ root);
  if (top.uid === id.uid) return closeToOthers(root);
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(/* turbopackIgnore: true */ dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      const st = fs.lstatSync(/* turbopackIgnore: true */ p);
      if (st.uid !== 0 || (st.isFile() && st.nlink > 1)) continue;
      fs.lchownSync(/* turbopackIgnore: true */ p, id.uid, id.gid);
      if (st.isDirectory()) walk(p);
    }
  };
  walk(root);
  if (top.uid !== 0) return;
  fs.lchownSync(/* turbopackIgnore: true */ root, id.uid, id.gid);
  closeToOthers(root);
}

/**
 * At start: the data dir (token, store) mode 0700 and the token file 0600, every exec-capable agent's workspace
 * made and handed to its exec user; a warning for each agent whose commands cannot be isolated or cannot reach
 * their workspace. Never fails the start.
 */
export function prepareExecIsolation(config: CrosstalkConfig, log: Logger, configFile?: string): void {
  try {
    fs.mkdirSync(/* turbopackIgnore: true */ config.dataDir, { recursive: true, mode: 0o700 });
    const st = fs.statSync(/* turbopackIgnore: true */ config.dataDir);
    // A shared folder (sticky /tmp) is not ours to close: say so instead.
    if (st.mode & 0o1000) log.warn({ dataDir: config.dataDir }, 'the data dir is a shared (sticky) folder: give crosstalk a folder of its own (CROSSTALK_DATA_DIR)');
    else if ((st.mode & 0o777) !== 0o700) fs.chmodSync(/* turbopackIgnore: true */ config.dataDir, 0o700);
    const token = path.join(config.dataDir, 'token');
    if (fs.existsSync(/* turbopackIgnore: true */ token)) fs.chmodSync(/* turbopackIgnore: true */ token, 0o600);
  } catch (e) {
    log.warn({ err: e, dataDir: config.dataDir }, 'cannot make the data dir private (mode 0700)');
  }
  const notIsolated = new Map<string, string[]>();
  const heldBy = new Set<string>();
  // One warning per folder out of reach (agents' workspaces under one root share it), naming the agents it stops.
  const blockedAt = new Map<string, { user: string; blocked: string; agents: string[]; workspaces: string[] }>();
  for (const agent of config.agents) {
    if (agent.a2a) continue; // its turns run elsewhere
    const id = execIdentity(agent.execUser);
    if (!id.isolated) {
      notIsolated.set(id.reason, [...(notIsolated.get(id.reason) ?? []), agent.id]);
      continue;
    }
    try {
      mkdirFor(agent.workspace, id);
      // Made the exec user's by an earlier version (mkdirFor above): a command can rename the workspaces in it.
      const holder = path.dirname(path.resolve(/* turbopackIgnore: true */ agent.workspace));
      if (fs.lstatSync(/* turbopackIgnore: true */ holder).uid === id.uid && !heldBy.has(holder)) {
        heldBy.add(holder);
        log.warn({ folder: holder }, `the folder holding the workspaces belongs to ${id.user}, so a command can swap a workspace in it: give it to root (chown root ${holder})`);
      }
      handOverWorkspace(agent.workspace, id);
      const blocked = blockedFor(agent.workspace, id);
      if (blocked) {
        const key = `${id.user}\0${blocked}`;
        const b = blockedAt.get(key) ?? { user: id.user, blocked, agents: [], workspaces: [] };
        b.agents.push(agent.id);
        b.workspaces.push(agent.workspace);
        blockedAt.set(key, b);
      }
    } catch (e) {
      log.warn({ err: e, agent: agent.id, workspace: agent.workspace }, `cannot prepare the workspace for exec as ${id.user}`);
    }
  }
  for (const { user, blocked, agents, workspaces } of blockedAt.values()) {
    log.warn({ agents, workspaces, blocked }, `exec runs as ${user}, who cannot use ${blocked} on the way to the workspace of ${agents.join(', ')}: their commands will fail`);
  }
  // The config file holds secrets (channel tokens, webhook secrets, A2A tokens, MCP headers): one its exec users can
  // read is read by any command. Not changed here (it is the operator's file): said, with the fix.
  const users = [...new Map(config.agents.filter((a) => !a.a2a).map((a) => execIdentity(a.execUser)).flatMap((id) => (id.isolated ? [[id.user, id] as const] : []))).values()];
  try {
    const st = configFile && users.length ? fs.statSync(/* turbopackIgnore: true */ configFile) : null;
    const readers = st ? users.filter((id) => (st.uid === id.uid ? st.mode & 0o400 : st.gid === id.gid ? st.mode & 0o040 : st.mode & 0o004)) : [];
    if (readers.length) log.warn({ configFile, users: readers.map((id) => id.user) }, `the config file ${configFile} is readable by ${readers.map((id) => id.user).join(', ')}, who runs exec: a command can read the secrets in it (chmod 600 ${configFile})`);
  } catch {
    /* no config file: nothing to read */
  }
  for (const [reason, agents] of notIsolated) {
    log.warn({ agents }, `exec is not isolated: ${reason}; a command can read the token, the store and the data dir (README, Security)`);
  }
  // As root, whether commands get a PID namespace and their own /tmp (found out once, after the start's own work, so the first command does not wait for it).
  if (process.getuid?.() === 0) {
    setTimeout(() => {
      void pidNamespace().then((ns) => {
        const shared = sharedTmpReason(ns, users.length > 0);
        if ('reason' in ns) log.warn(`exec runs without a PID namespace of its own: ${ns.reason}; a command that leaves its session and closes fd 3 outlives it, and commands share the host's /tmp, /var/tmp and /dev/shm (README, Security)`);
        else if (shared) log.warn(`exec's commands share the host's /tmp, /var/tmp and /dev/shm: ${shared}; a command can plant files there that root's programs then use (README, Security)`);
      });
    }, 2000).unref();
  }
}

/** Why commands in the namespace `ns` get no /tmp of their own (null: they do); `isolated`: some run as another user, which needs setpriv for it. */
export function sharedTmpReason(ns: PidNamespace, isolated: boolean, setpriv: string | null = systemBinary('setpriv')): string | null {
  if ('reason' in ns) return ns.reason;
  if ('reason' in ns.tmp) return ns.tmp.reason;
  return isolated && !setpriv ? 'there is no util-linux setpriv (unshare drops to the exec user before anything could mount them)' : null;
}
