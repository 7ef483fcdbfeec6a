// The request builder of each provider that has one (pure; see request.ts). Docker plans a script to run by hand.
import type { Provider } from "../recipe/schema.js";
import type { RequestBuilder } from "./request.js";
import { buildLocalRequest } from "./local-request.js";
import { buildModelArtsRequest } from "./modelarts-request.js";
import { buildSlurmRequest } from "./slurm-request.js";
import { buildTioneRequest } from "./tione-request.js";
import { buildRayRequest } from "./ray-request.js";

export const REQUEST_BUILDERS: Partial<Record<Provider, RequestBuilder>> = {
  local: buildLocalRequest,
  modelarts: buildModelArtsRequest,
  slurm: buildSlurmRequest,
  tione: buildTioneRequest,
  ray: buildRayRequest,
};
