// examples/approval.mjs end to end (docs/approvals.md): an AI SDK loop whose code tool pauses at a
// call marked `needsApproval`, a scripted person decides, and the loop resumes the run on a new
// executor to the model's final answer. Child processes, as a user runs the example.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const example = (...args) =>
  execFileSync(process.execPath, ['examples/approval.mjs', ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 })
    .trim()
    .split('\n');
const asked = ['billing.refund {"orderId":"A-1042","amount":42.5}'];

describe('examples/approval.mjs', () => {
  it('approved: the loop pauses once, resumes, and the refund runs exactly once', () => {
    const [answer, facts] = example();
    expect(answer).toBe('Refunded 42.5 EUR for order A-1042 (rf_A-1042).');
    // getOrder ran once: the resume answered it from the token, not by dispatching it again.
    expect(JSON.parse(facts)).toEqual({ pauses: 1, asked, ran: { getOrder: 1, refund: 1 } });
  });

  it('denied: the refund rejects inside the program with the reason and never runs', () => {
    const [answer, facts] = example('deny');
    expect(answer).toMatch(/^The refund did not go through: .*The call to billing\.refund was not made: .*denied \(refunds need a manager today\)/);
    expect(JSON.parse(facts)).toEqual({ pauses: 1, asked, ran: { getOrder: 1, refund: 0 } });
  });
});
