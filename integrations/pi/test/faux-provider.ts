// pi's scripted "faux" model as provider `faux`, model `faux-1`, registered from inside the pi
// process (pi 1.x's command-line tool bundles its own pi-ai: a provider registered by a wrapper
// process would not be seen). For the tests' and the benchmark's model extensions.
import { registerFauxProvider } from "@mariozechner/pi-ai";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

export function registerFaux(pi: ExtensionAPI, contextWindow = 128_000) {
  const faux = registerFauxProvider({ api: "faux", provider: "faux", models: [{ id: "faux-1" }] });
  pi.registerProvider("faux", {
    baseUrl: "http://localhost:0",
    apiKey: "faux-key",
    api: "faux" as any,
    models: [{ id: "faux-1", name: "Faux", reasoning: false, input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow, maxTokens: 4096 }],
  });
  return faux;
}
