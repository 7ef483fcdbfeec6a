// The storage adapter's public surface in one import: the object-store interface and errors, store URIs, and
// the factory that opens a store for a URI. The backends (fs.ts, s3.ts) never import this module.
export {
  DEFAULT_PART_BYTES, StorageError, formatRetryNotice, retryLines, type ByteRange, type DownloadOptions, type ObjectInfo, type ObjectStore, type PutFileOptions,
  type PutFileResult, type RetryNotice, type StoredCopy,
} from "./object-store.js";
export { parseStoreUri, type StoreScheme, type StoreUri } from "./store-uri.js";
export { type OpenStoreOptions, openStore } from "./open-store.js";
