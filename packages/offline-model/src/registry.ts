/**
 * The scenarios a server knows, by name. It starts with the default scenario (which a scenario
 * named "default" replaces); tests add theirs before or after the server starts.
 */
import { defaultScenario } from "./default-scenario.js";
import { defineScenario, type Scenario, type ScenarioOptions, type Step } from "./scenario.js";

export class ScenarioRegistry {
  readonly #byName = new Map<string, Scenario>();

  constructor(scenarios: Iterable<Scenario> = []) {
    this.add(defaultScenario);
    for (const scenario of scenarios) this.add(scenario);
  }

  /** Defines and adds a scenario; replaces one of the same name. */
  define(name: string, steps: readonly Step[], opts?: ScenarioOptions): Scenario {
    const scenario = defineScenario(name, steps, opts);
    this.add(scenario);
    return scenario;
  }

  add(scenario: Scenario): this {
    this.#byName.set(scenario.name, scenario);
    return this;
  }

  get(name: string): Scenario | undefined {
    return this.#byName.get(name);
  }

  names(): string[] {
    return [...this.#byName.keys()].sort();
  }
}
