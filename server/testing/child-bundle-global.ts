// vitest global setup (vitest.config.mts): builds the gateway child processes' bundles once for the run (child-bundle.ts).
import { buildChildBundles } from './child-bundle';

export default async function setup(): Promise<void> {
  await buildChildBundles();
}
