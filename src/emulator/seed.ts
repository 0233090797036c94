// The `demo` seed: binder "Project Atlas" with nested tabs and folders (up to 4 levels), ~300 documents of
// deterministic content (text, csv, a few binaries up to 1 MiB), some with several versions, and the
// required enumerated customer element `Department`. Runs in one state write (Store.batch), well under 1 s.
import { mulberry32 } from './ids.js';
import type { EmulatorControl } from './types.js';
import type { Store } from './store.js';

export const DEPARTMENTS = [
  { id: 'eng', label: 'Engineering' },
  { id: 'ops', label: 'Operations' },
  { id: 'legal', label: 'Legal' },
];

interface Tree {
  name: string;
  category: string;
  files: number;
  kind: 'text' | 'csv' | 'mixed' | 'binary';
  children?: Tree[];
}

const TREE: Tree[] = [
  {
    name: '01 Contracts', category: 'contract', files: 6, kind: 'text',
    children: [
      { name: 'Suppliers', category: 'contract', files: 8, kind: 'text', children: [
        { name: 'Steel Works Ltd', category: 'contract', files: 10, kind: 'mixed', children: [
          { name: 'Amendments', category: 'contract', files: 6, kind: 'text' },
        ] },
        { name: 'Concrete & Co', category: 'contract', files: 8, kind: 'text' },
      ] },
      { name: 'Customers', category: 'contract', files: 12, kind: 'text' },
    ],
  },
  {
    name: '02 Design', category: 'drawing', files: 4, kind: 'text',
    children: [
      { name: 'Drawings', category: 'drawing', files: 6, kind: 'binary', children: [
        { name: 'Structural', category: 'drawing', files: 14, kind: 'mixed', children: [
          { name: 'Level 1', category: 'drawing', files: 12, kind: 'mixed' },
          { name: 'Level 2', category: 'drawing', files: 12, kind: 'mixed' },
        ] },
        { name: 'Architectural', category: 'drawing', files: 14, kind: 'mixed' },
      ] },
      { name: 'Calculations', category: 'report', files: 16, kind: 'csv' },
    ],
  },
  {
    name: '03 Site', category: 'report', files: 4, kind: 'text',
    children: [
      { name: 'Daily Reports', category: 'report', files: 10, kind: 'text', children: [
        { name: '2026', category: 'report', files: 10, kind: 'text', children: [
          { name: 'Q1', category: 'report', files: 30, kind: 'text' },
          { name: 'Q2', category: 'report', files: 24, kind: 'text' },
        ] },
      ] },
      { name: 'Safety', category: 'report', files: 12, kind: 'text' },
    ],
  },
  {
    name: '04 Finance', category: 'report', files: 4, kind: 'csv',
    children: [
      { name: 'Invoices', category: 'report', files: 20, kind: 'csv', children: [
        { name: '2026', category: 'report', files: 24, kind: 'csv' },
      ] },
      { name: 'Budgets', category: 'report', files: 8, kind: 'csv' },
    ],
  },
  { name: '05 Correspondence', category: 'correspondence', files: 30, kind: 'text' },
];

/** Seeds the demo binder into the default tenant; returns its id. */
export function seedDemo(store: Store, control: EmulatorControl): { binderId: string } {
  const rand = mulberry32(20260101);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  let counter = 0;

  return store.batch(() => {
    const binder = control.createBinder({ name: 'Project Atlas', type: 'Project' });
    control.addMetadataElement(binder.id, { id: 'Department', label: 'Department', dataType: 'Enum', allowedValues: DEPARTMENTS, required: true });
    control.addMetadataElement(binder.id, { id: 'Reference', label: 'Reference', dataType: 'Text', required: false });

    const addFiles = (folderId: string, node: Tree, depth: number) => {
      for (let i = 1; i <= node.files; i++) {
        counter++;
        const kind = node.kind === 'mixed' ? pick(['text', 'csv', 'binary'] as const) : node.kind;
        const { fileName, content } = makeFile(kind, node.name, i, counter, rand);
        const metadata = [
          { metadataElementId: 'Department', valueId: DEPARTMENTS[counter % 3]!.id },
          { metadataElementId: 'GLOBAL_Category', valueId: node.category },
        ];
        if (counter % 4 === 0) metadata.push({ metadataElementId: 'Reference', valueId: `ATL-${1000 + counter}` });
        const { document } = control.addDocument(binder.id, folderId, fileName, content, { versionLabel: '1.0', metadata });
        // Every 9th document has a history: two or three versions.
        if (counter % 9 === 0) {
          const extra = 1 + (counter % 2);
          for (let v = 1; v <= extra; v++) {
            control.addVersion(document.id, Buffer.concat([content, Buffer.from(`\nrevision ${v + 1}\n`)]), { versionLabel: `${v + 1}.0` });
          }
        }
      }
      for (const child of node.children ?? []) {
        const f = control.createFolder(binder.id, { name: child.name, parentId: folderId });
        addFiles(f.id, child, depth + 1);
      }
    };
    for (const tab of TREE) {
      const f = control.createFolder(binder.id, { name: tab.name, parentId: null });
      addFiles(f.id, tab, 1);
    }
    // A second, small binder so binder choice matters in the demo.
    const other = control.createBinder({ name: 'Vendor Onboarding', type: 'Project' });
    const tab = control.createFolder(other.id, { name: 'Forms', parentId: null });
    control.addDocument(other.id, tab.id, 'Onboarding checklist.txt', 'Checklist\n- NDA\n- W-9\n- Bank details\n');
    return { binderId: binder.id };
  });
}

function makeFile(
  kind: 'text' | 'csv' | 'binary',
  folder: string,
  i: number,
  n: number,
  rand: () => number,
): { fileName: string; content: Buffer } {
  const pad = String(i).padStart(3, '0');
  if (kind === 'csv') {
    const rows = 10 + Math.floor(rand() * 400);
    const lines = ['date,item,quantity,amount'];
    for (let r = 0; r < rows; r++) {
      lines.push(`2026-${String(1 + (r % 12)).padStart(2, '0')}-${String(1 + (r % 28)).padStart(2, '0')},item-${r},${Math.floor(rand() * 100)},${(rand() * 10000).toFixed(2)}`);
    }
    return { fileName: `${folder} ledger ${pad}.csv`, content: Buffer.from(lines.join('\n') + '\n') };
  }
  if (kind === 'binary') {
    // A few large ones (every 16th binary is 256 KiB - 1 MiB), the rest 1-64 KiB.
    const size = n % 16 === 0 ? 256 * 1024 + Math.floor(rand() * 768 * 1024) : 1024 + Math.floor(rand() * 63 * 1024);
    const buf = Buffer.allocUnsafe(size);
    const r = mulberry32(n);
    for (let b = 0; b < size; b += 4) buf.writeUInt32LE(Math.floor(r() * 4294967296), Math.min(b, size - 4));
    return { fileName: `${folder} drawing ${pad}.dwg`, content: buf };
  }
  // Some names carry non-ASCII characters (NFC) and spaces, as real file names do.
  const names = ['Minutes', 'Report', 'Notes', 'Résumé', 'Übergabe', 'Memo'];
  const name = names[n % names.length]!;
  const paragraphs = 1 + Math.floor(rand() * 40);
  const text = Array.from({ length: paragraphs }, (_, p) => `${name} ${pad}, paragraph ${p + 1}: project atlas status ${Math.floor(rand() * 1e6)}.`).join('\n');
  return { fileName: `${folder} ${name} ${pad}.txt`.normalize('NFC'), content: Buffer.from(text + '\n') };
}
