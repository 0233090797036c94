// Schema of the per-pair state DB as an ordered list of migrations, tracked with PRAGMA user_version.
// Kept as strings (not .sql files) so the build needs no copy step; never edit a shipped entry, append one.

/**
 * MIGRATIONS[i] upgrades a DB from user_version i to i + 1. Each entry runs in one transaction
 * together with the user_version bump, so a crash leaves the DB at a whole version.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: base (the archive), upload outbox, conflicts history, current issues, folder snapshot, meta.
  `
  CREATE TABLE base (
    document_id   TEXT PRIMARY KEY,
    version_id    TEXT NOT NULL,
    version_label TEXT,
    folder_id     TEXT NOT NULL,
    file_name     TEXT NOT NULL,
    rel_path      TEXT NOT NULL,
    key           TEXT NOT NULL,
    sha256        TEXT NOT NULL,
    size          INTEGER NOT NULL,
    mtime_ms      REAL NOT NULL,
    -- REAL: Node hands out inodes as doubles, and 64-bit inode numbers above 2^63 do not fit INTEGER.
    inode         REAL NOT NULL
  ) STRICT;
  -- Not UNIQUE: the executor may briefly hold two rows on one key inside a transaction (a move onto a
  -- path another document is leaving); reconcile reports real key collisions itself.
  CREATE INDEX base_by_key ON base(key);

  CREATE TABLE outbox (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    rel_path      TEXT NOT NULL,
    key           TEXT NOT NULL,
    document_id   TEXT,
    folder_id     TEXT NOT NULL,
    file_name     TEXT NOT NULL,
    sha256        TEXT NOT NULL,
    size          INTEGER NOT NULL,
    mtime_ms      REAL NOT NULL,
    inode         REAL NOT NULL,
    version_label TEXT NOT NULL,
    reason        TEXT NOT NULL,
    stage         TEXT NOT NULL CHECK (stage IN ('planned', 'slot', 'put', 'committing', 'committed')),
    upload_id     TEXT,
    version_id    TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
  ) STRICT;

  CREATE TABLE conflicts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    rel_path      TEXT NOT NULL,
    conflict_path TEXT,
    document_id   TEXT,
    policy        TEXT NOT NULL,
    detail        TEXT NOT NULL,
    at            TEXT NOT NULL
  ) STRICT;

  CREATE TABLE issues (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    rel_path      TEXT NOT NULL,
    document_id   TEXT,
    code          TEXT NOT NULL,
    detail        TEXT NOT NULL
  ) STRICT;

  CREATE TABLE folders (
    folder_id     TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    parent_id     TEXT,
    rel_path      TEXT NOT NULL,
    key           TEXT NOT NULL
  ) STRICT;

  CREATE TABLE meta (
    key           TEXT PRIMARY KEY,
    value         TEXT NOT NULL
  ) STRICT;

  -- counters: unused since the transfer history moved to metrics; kept because shipped entries never change.
  CREATE TABLE counters (
    name          TEXT PRIMARY KEY,
    value         INTEGER NOT NULL
  ) STRICT;
  `,
  // 2: documents deleted locally under localDeletePolicy 'forget': not downloaded again while the remote
  // version stays the one that was deleted ("forget it until it changes remotely").
  `
  CREATE TABLE forgotten (
    document_id   TEXT PRIMARY KEY,
    version_id    TEXT NOT NULL,
    rel_path      TEXT NOT NULL
  ) STRICT;
  `,
  // 3: local steps in flight (a download being put in place, a move), recorded before the file system is
  // touched, so that a crash between the file operation and its base row is finished at the next start.
  `
  CREATE TABLE intents (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    kind          TEXT NOT NULL CHECK (kind IN ('download', 'move')),
    payload       TEXT NOT NULL,
    created_at    TEXT NOT NULL
  ) STRICT;
  `,
  // 4: the inode change time of each file (FileStat.ctimeMs): a rewrite that keeps size, mtime and inode
  // (cp -p, tar x, rsync --inplace) changes only it. 0 in rows written before: not compared until refreshed.
  `
  ALTER TABLE base ADD COLUMN ctime_ms REAL NOT NULL DEFAULT 0;
  ALTER TABLE outbox ADD COLUMN ctime_ms REAL NOT NULL DEFAULT 0;
  `,
  // 5: the content a forgotten document had (its base row's SHA-256): a file re-created at its path with that
  // content is the document again, not a new version of it. NULL in rows written before.
  `
  ALTER TABLE forgotten ADD COLUMN sha256 TEXT;
  `,
  // 6: edits committed whose version list is still to be read for versions someone made during the upload
  // (sync/buried-edit.ts). Written with the edit's base row, so that a crash, a lost answer or a failed listing
  // after the commit leaves the check to the next pass instead of skipping it (black-box round 31a, F1).
  `
  CREATE TABLE buried_checks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id   TEXT NOT NULL,
    rel_path      TEXT NOT NULL,
    folder_id     TEXT NOT NULL,
    edited_from   TEXT NOT NULL,
    ours          TEXT NOT NULL,
    ours_sha256   TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL
  ) STRICT;
  `,
  // 7: versions each document's base row held before its present one (remote/older-than-synced.ts): a listing that
  // names one of them is older than what was synced (a search index lagging behind commits), not a change.
  // Kept by a trigger, so that every step moving a row to a newer version records it, whichever it is; a step
  // that records an older version on purpose forgets the document's list (forgetSuperseded). Pruned after a day.
  `
  CREATE TABLE superseded_versions (
    document_id   TEXT NOT NULL,
    version_id    TEXT NOT NULL,
    at            INTEGER NOT NULL,
    PRIMARY KEY (document_id, version_id)
  ) STRICT;
  CREATE TRIGGER base_version_superseded AFTER UPDATE OF version_id ON base
    WHEN OLD.version_id <> NEW.version_id
  BEGIN
    INSERT OR IGNORE INTO superseded_versions (document_id, version_id, at) VALUES (OLD.document_id, OLD.version_id, unixepoch());
    DELETE FROM superseded_versions WHERE document_id = NEW.document_id AND version_id = NEW.version_id;
  END;
  `,
  // 8: each file's birth time (FileStat.bornMs), where the filesystem reports one: a new file handed a freed inode
  // number (ext4 does at once: `sed -i a b`) is then not taken for a synced file moved there. 0 in rows written
  // before, and on filesystems without birth times: the inode alone decides, as before.
  `
  ALTER TABLE base ADD COLUMN born_ms REAL NOT NULL DEFAULT 0;
  ALTER TABLE outbox ADD COLUMN born_ms REAL NOT NULL DEFAULT 0;
  -- The in-sync mark would let the first pass skip reconcile, which is where the rows take their files' birth times.
  DELETE FROM meta WHERE key = 'inSyncMark';
  `,
  // 9: documents this client created by an upload and no listing has shown yet (sync/never-listed.ts): one the
  // service then says does not exist was never made (a commit answer naming another document), not deleted by a
  // colleague: its file is uploaded again rather than moved to the trash. And which superseded versions a row
  // never held (found under ours by a buried-version check): the ones it held are none made during a later upload.
  `
  CREATE TABLE never_listed (
    document_id   TEXT PRIMARY KEY
  ) STRICT;
  ALTER TABLE superseded_versions ADD COLUMN found_buried INTEGER NOT NULL DEFAULT 0;
  `,
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;
