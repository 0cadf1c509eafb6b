import { AUTOMATIC, decideApproval, parseApprovalPolicy } from './approval-policy';

describe('approval policy', () => {
  it('runs everything automatically by default, recording nothing', () => {
    expect(parseApprovalPolicy(undefined)).toBe(AUTOMATIC);
    expect(parseApprovalPolicy('  ')).toBe(AUTOMATIC);
    expect(decideApproval(AUTOMATIC, 'rm -rf /')).toEqual({ kind: 'none' });
  });

  it('asks a person for matching commands first, then approves the automated ones', () => {
    const p = parseApprovalPolicy(JSON.stringify({ requireApproval: ['^rm ', 'deploy'], autoApprove: ['^(ls|cat) ', '^rm -i'] }));
    expect(decideApproval(p, 'rm -rf build')).toEqual({ kind: 'human', reason: expect.stringContaining('/^rm /') });
    expect(decideApproval(p, 'rm -i x')).toMatchObject({ kind: 'human' });
    expect(decideApproval(p, 'ls -la')).toEqual({ kind: 'automated', reason: expect.stringContaining('/^(ls|cat) /') });
    expect(decideApproval(p, 'make')).toEqual({ kind: 'none' });
  });

  it('can require a person for everything it does not approve', () => {
    const p = parseApprovalPolicy('{"autoApprove": ["^ls"], "default": "human"}');
    expect(decideApproval(p, 'ls')).toMatchObject({ kind: 'automated' });
    expect(decideApproval(p, 'make')).toMatchObject({ kind: 'human' });
  });

  it('refuses an invalid policy with a clear message', () => {
    expect(() => parseApprovalPolicy('{nope')).toThrow(/must be JSON/);
    expect(() => parseApprovalPolicy('{"requireApproval": ["("]}')).toThrow(/invalid regular expression/);
    expect(() => parseApprovalPolicy('{"requireAproval": []}')).toThrow(/APPROVAL_POLICY/);
  });
});
