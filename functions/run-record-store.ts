// Run records in an object store, for functions (no local disk outlives an invocation): <prefix>/<name>.json and
// <prefix>/<base>.attempt under the state store's root (RLPIPE_STATE_STORE). Each record is one PUT of the whole
// object, which every S3-compatible store applies atomically: a reader sees the old record or the new one, never
// a part. Two writers of one record (a deploy and a status at the same moment) do not merge: the last one wins, and
// both carry the same run (name, provider id, recipe), so at most an older lastStatus is lost, which the next
// status call writes again.
import { type RunRecord, type RunRecordStore, RunRecord as RunRecordSchema, RunRecordError, checkRunName, parseRunRecord, parseStartedAttempt, sortRunRecords } from "../adapters/providers/run-records.js";
import type { ObjectStore } from "../adapters/storage/store.js";

export type RecordObjectStore = Pick<ObjectStore, "url" | "get" | "putBytes" | "list">;

const isNotFound = (e: unknown) => (e as { code?: unknown })?.code === "not_found";

/** Run records under `prefix` ("runs" by default) of `store`. */
export function storeRunRecords(store: RecordObjectStore, prefix = "runs"): RunRecordStore {
  const dir = prefix.replace(/^\/+|\/+$/g, "");
  const keyOf = (file: string) => `${dir}/${file}`;
  const label = `${store.url}/${dir}`;
  const read = async (name: string): Promise<RunRecord> => {
    const key = keyOf(`${checkRunName(name)}.json`);
    let raw: Buffer;
    try {
      raw = await store.get(key);
    } catch (e) {
      if (isNotFound(e)) throw new RunRecordError("unknown_run", `no run named ${name} in ${label}`, { exitCode: 2, hint: "deploy it first; the console's status reads the runs the console (or a deploy with this state store) made" });
      throw e;
    }
    return parseRunRecord(raw.toString("utf8"), `${store.url}/${key}`);
  };
  return {
    label,
    read,
    async write(record) {
      const checked = RunRecordSchema.parse(record);
      await store.putBytes(keyOf(`${checkRunName(checked.name)}.json`), `${JSON.stringify(checked, null, 2)}\n`, { contentType: "application/json" });
    },
    async list() {
      const names = (await store.list(`${dir}/`)).map((o) => o.key.slice(dir.length + 1)).filter((k) => !k.includes("/") && k.endsWith(".json")).map((k) => k.slice(0, -5)).sort();
      const records: RunRecord[] = [];
      const problems: string[] = [];
      for (const n of names) {
        try { records.push(await read(n)); } catch (e) { problems.push((e as Error).message); }
      }
      return { records: sortRunRecords(records), problems };
    },
    async readStartedAttempt(base) {
      const key = keyOf(`${checkRunName(base)}.attempt`);
      try {
        return parseStartedAttempt((await store.get(key)).toString("utf8"), `${store.url}/${key}`);
      } catch (e) {
        if (isNotFound(e)) return 0;
        throw e;
      }
    },
    async writeStartedAttempt(base, n) {
      await store.putBytes(keyOf(`${checkRunName(base)}.attempt`), `${n}\n`, { contentType: "text/plain" });
    },
  };
}
