// Which programs hold a file open for writing, as far as /proc tells (Linux). A file a program keeps open for
// writing (a logger's `exec 3>>file`) must not be replaced or moved to the trash under it: its later writes go
// to the inode taken away, unlinked when the trash is on another disk, and are lost, or land unseen in the trash
// (black-box round 35b, F3). Best effort: only the processes this user may look at are seen (all of them for
// root), and a file opened after the look is not; elsewhere than Linux nothing is seen.
import fs from 'node:fs';

/** A process holding a file open for writing. */
export interface Writer {
  pid: number;
  /** Its command name (/proc/<pid>/comm), '' when unreadable. */
  command: string;
}

/** One look at /proc: by "dev:ino" of each regular file some other process holds open, the fd paths holding it. */
export class OpenFiles {
  private constructor(private readonly byFile: Map<string, string[]>) {}

  /** Reads /proc (about 5 µs per open descriptor seen); empty where there is no /proc. */
  static look(procDir = '/proc', self = process.pid): OpenFiles {
    const byFile = new Map<string, string[]>();
    let pids: string[];
    try {
      pids = fs.readdirSync(procDir).filter((n) => /^\d+$/.test(n) && Number(n) !== self);
    } catch {
      return new OpenFiles(byFile);
    }
    for (const pid of pids) {
      let fds: string[];
      try {
        fds = fs.readdirSync(`${procDir}/${pid}/fd`);
      } catch {
        continue; // another user's process (EACCES), or gone
      }
      for (const fd of fds) {
        let st: fs.Stats | undefined;
        try {
          st = fs.statSync(`${procDir}/${pid}/fd/${fd}`, { throwIfNoEntry: false });
        } catch {
          continue; // not ours to look at (EACCES), or a file gone under it
        }
        if (st === undefined || !st.isFile()) continue;
        const key = `${st.dev}:${st.ino}`;
        const holders = byFile.get(key);
        const at = `${procDir}/${pid}/fdinfo/${fd}`;
        if (holders === undefined) byFile.set(key, [at]);
        else holders.push(at);
      }
    }
    return new OpenFiles(byFile);
  }

  /** The processes that held the file of dev/ino open for writing at the look and still do; none: []. */
  writersOf(dev: number, ino: number): Writer[] {
    const out: Writer[] = [];
    for (const fdinfo of this.byFile.get(`${dev}:${ino}`) ?? []) {
      let text: string;
      try {
        text = fs.readFileSync(fdinfo, 'utf8');
      } catch {
        continue; // closed since
      }
      const flags = /^flags:\s*([0-7]+)/m.exec(text)?.[1];
      // O_ACCMODE: 1 O_WRONLY, 2 O_RDWR. A reader does not lose anything when the file is replaced.
      if (flags === undefined || (parseInt(flags, 8) & 3) === 0) continue;
      const pid = Number(fdinfo.split('/').at(-3));
      if (out.some((w) => w.pid === pid)) continue;
      let command = '';
      try {
        command = fs.readFileSync(fdinfo.replace(/fdinfo\/\d+$/, 'comm'), 'utf8').trim();
      } catch {
        // gone: still named by its pid
      }
      out.push({ pid, command });
    }
    return out;
  }
}
