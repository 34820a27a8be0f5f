/**
 * Where workspace snapshots are kept: a flat namespace of immutable objects by key, behind one
 * interface with two implementations, a local directory (dir-store.ts, the embedded default) and
 * an S3-compatible object store (s3-store.ts, for brokers on several machines). Keys are
 * "chunks/<sha256>" and "sessions/<session>/<seq>.json.gz" (snapshots.ts). A store that cannot be
 * reached answers UNAVAILABLE within its timeout, never hangs: the session goes on without
 * persistence until it is back.
 */
export interface StoredObject {
  readonly key: string;
  readonly size: number;
  readonly modifiedAt: Date;
}

export interface BlobStore {
  /** "dir:/var/lib/..." or "s3://bucket/prefix at http://host:port", for logs and errors. */
  readonly description: string;
  /** Writes an object whole (replacing one of the same key). */
  put(key: string, body: Buffer): Promise<void>;
  /** The object, or undefined when there is none by that key. */
  get(key: string): Promise<Buffer | undefined>;
  /** Whether an object exists. */
  has(key: string): Promise<boolean>;
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): Promise<StoredObject[]>;
  /** Removes objects; a key that is not there is no error. */
  delete(keys: readonly string[]): Promise<void>;
}
