// The user's files, kept in this browser's IndexedDB (database "topos-files", one record a file,
// keyed by name) until the user removes them: nothing is sent anywhere. The raw IndexedDB API
// is small enough here (open, read all, put, delete) that a wrapper library would add more
// than it saves.

/** One of the user's files as stored. */
export interface StoredFile {
  name: string;
  bytes: ArrayBuffer;
  /** When it was added (ms since the epoch). */
  added: number;
}

/**
 * The limits: 50 MB a file and 200 MB in all (MB = 10^6 bytes). Every run holds a copy of each
 * file in both of the page's Pythons (the readings worker and the run worker), inside their
 * WebAssembly heaps, which cannot grow past 4 GB and share the tab's memory with numpy's own
 * arrays (a 50 MB .npy loaded is 50 MB more); the worker keeps one more copy outside the heap.
 * 200 MB in all keeps that near a gigabyte, which a laptop's tab can hold.
 */
export const MAX_FILE_BYTES = 50_000_000;
export const MAX_TOTAL_BYTES = 200_000_000;

const DATABASE = "topos-files";
const STORE = "files";

let opened: Promise<IDBDatabase> | null = null;

function database(): Promise<IDBDatabase> {
  opened ??= new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(DATABASE, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: "name" });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error("IndexedDB could not be opened"));
    request.onblocked = () => reject(new Error("IndexedDB is held by another tab of an older version of this page"));
  });
  opened.catch(() => (opened = null)); // a later call tries again
  return opened;
}

/** Run one request in a transaction; resolves once the transaction has committed. */
async function transact<T>(mode: IDBTransactionMode, work: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await database();
  return new Promise<T>((resolve, reject) => {
    const transaction = db.transaction(STORE, mode);
    const request = work(transaction.objectStore(STORE));
    transaction.oncomplete = () => resolve(request.result);
    transaction.onerror = () => reject(transaction.error ?? request.error ?? new Error("IndexedDB failed"));
    transaction.onabort = () => reject(transaction.error ?? new Error("IndexedDB gave up (is the disk full?)"));
  });
}

/** Every stored file, by name. */
export async function storedFiles(): Promise<StoredFile[]> {
  const files = await transact<StoredFile[]>("readonly", (store) => store.getAll() as IDBRequest<StoredFile[]>);
  return files.sort((a, b) => a.name.localeCompare(b.name));
}

/** Store a file (one of the same name is replaced). */
export async function storeFile(file: StoredFile): Promise<void> {
  await transact("readwrite", (store) => store.put(file));
}

export async function removeStoredFile(name: string): Promise<void> {
  await transact("readwrite", (store) => store.delete(name));
}

/** Whether `name` can be a file in the working directory itself (topos.playground.files.is_file_name says the same). */
export function isFileName(name: string): boolean {
  return name !== "" && name !== "." && name !== ".." && !/[/\\\0]/.test(name);
}

/** Why these files cannot be added to `current` (each checked against the limits, a file of the same name replaced), or null. */
export function refusal(current: { name: string; size: number }[], added: { name: string; size: number }[]): string | null {
  for (const file of added) {
    if (!isFileName(file.name)) return `"${file.name}" cannot be a file name in the script's folder`;
    if (file.size > MAX_FILE_BYTES) {
      return `${file.name} is ${megabytes(file.size)}: a file may be at most ${megabytes(MAX_FILE_BYTES)} (each run holds a copy in each of the page's two Pythons)`;
    }
  }
  const names = new Set(added.map((file) => file.name));
  const kept = current.filter((file) => !names.has(file.name)).reduce((sum, file) => sum + file.size, 0);
  const total = kept + added.reduce((sum, file) => sum + file.size, 0);
  if (total > MAX_TOTAL_BYTES) {
    return `that would make ${megabytes(total)} in all, past the ${megabytes(MAX_TOTAL_BYTES)} limit: remove a file first`;
  }
  return null;
}

/** A size as people read it: bytes, kB or MB (10^3 and 10^6), to a tenth ("1.5 kB", "50 MB"). */
export function megabytes(bytes: number): string {
  const tenths = (value: number) => value.toFixed(1).replace(/\.0$/, "");
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1_000_000) return `${tenths(bytes / 1000)} kB`;
  return `${tenths(bytes / 1_000_000)} MB`;
}
