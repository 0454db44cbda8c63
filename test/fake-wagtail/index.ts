/**
 * The fake Wagtail origin: a `node:http` server that answers the pages API like Wagtail 7.4.3, plus a
 * deterministic seed-shaped site generator.
 * @module
 */
export { startFakeWagtail } from './fake-wagtail.js'
export { costOf, createCostModel, DEFAULT_WORKERS, MEASURED_RATES } from './cost-model.js'
export type { BusyTime, CostModel, CostModelOptions, CostRates } from './cost-model.js'
export { formatWagtailTimestamp, generateSite, GENERATED_ROOT_ID, SEED_PAGE_TYPES } from './site-generator.js'
export { probeTree } from './probe-tree.js'
export type { GenerateSiteOptions } from './site-generator.js'
export { drfJson, DJANGO_404_HTML, DJANGO_500_HTML, OPTIONS_METADATA } from './render.js'
export type {
  Fault,
  FaultContext,
  FakeMedia,
  FakeMediaItem,
  FakePage,
  FakeWagtail,
  FakeWagtailOptions,
  HitCounters,
  RecordedRequest,
  RequestKind,
  WagtailVersion,
} from './types.js'
