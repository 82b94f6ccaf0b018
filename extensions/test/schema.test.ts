import Ajv2020 from "ajv/dist/2020";
import { describe, expect, it } from "vitest";
import { fixture, schema } from "./fixtures";
import { syntheticTape } from "./synthetic";

const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

function referencesResolve(s: ReturnType<typeof fixture>) {
  const ids = new Set(s.nodes.map((n) => n.id));
  const refs = [...s.edges.flatMap((e) => [e.source, e.target]), ...s.roots,
    ...(s.trace?.steps ?? []).flatMap((st) => [st.node, ...st.grad_inputs.map((g) => g.target), ...st.leaves.map((l) => l.node)])];
  return refs.filter((r) => !ids.has(r));
}

describe("tape.v1 schema", () => {
  for (const name of ["scalar", "mlp", "nan_cut"] as const) {
    it(`accepts the ${name} fixture, whose ids all resolve`, () => {
      const snap = fixture(name);
      expect(validate(snap), JSON.stringify(validate.errors)).toBe(true);
      expect(referencesResolve(snap)).toEqual([]);
      snap.trace?.steps.forEach((st, i) => expect(st.index).toBe(i));
    });
  }

  it("accepts the synthetic generator's output", () => {
    expect(validate(syntheticTape(200))).toBe(true);
  });

  it("rejects a bare NaN-free violation: non-finite numbers must be strings, and unknown fields", () => {
    const snap = fixture("scalar");
    (snap.nodes[0].value!.values as unknown[])[0] = "nan";
    expect(validate(snap)).toBe(false);
    const other = fixture("scalar") as unknown as Record<string, unknown>;
    other.extra = 1;
    expect(validate(other)).toBe(false);
  });
});
