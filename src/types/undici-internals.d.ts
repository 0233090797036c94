// Types for the undici files that service/undici-core.ts loads directly (undici ships types for its index only).
declare module 'undici/lib/dispatcher/agent.js' {
  import { Agent } from 'undici';
  export default Agent;
}
declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  export default function request(this: Dispatcher, opts: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
}
declare module 'undici/lib/core/util.js' {
  const util: { parseURL(url: string | URL): URL };
  export default util;
}
