// Key paths of config values, printed the way users write them: pairs[0].localPath, metadata[1].values["Doc Type"].

export type KeyPath = ReadonlyArray<PropertyKey>;

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

export function formatPath(path: KeyPath): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else {
      const s = String(seg);
      if (IDENT.test(s)) out += out === '' ? s : `.${s}`;
      else out += `[${JSON.stringify(s)}]`;
    }
  }
  return out === '' ? '(root)' : out;
}
