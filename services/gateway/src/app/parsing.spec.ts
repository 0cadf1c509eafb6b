import { ValidationError } from '@handplane/kernel';
import { formatSse } from '../sse/sse-stream';
import { resumeAfter } from './event-feed';
import { isValidId, stableId } from './ids';
import { parseOffset } from './output';

describe('request parsing', () => {
  it('parses offsets strictly', () => {
    expect(parseOffset(undefined)).toBe(0);
    expect(parseOffset('0')).toBe(0);
    expect(parseOffset('123')).toBe(123);
    for (const bad of ['-1', '1.5', 'abc', '1e3', ' 1', '99999999999999999', ['1', '2'], 5]) expect(() => parseOffset(bad)).toThrow(ValidationError);
  });

  it('resumes after Last-Event-ID, else ?after=, else from the start', () => {
    expect(resumeAfter(undefined, undefined)).toBe(0);
    expect(resumeAfter(undefined, '7')).toBe(7);
    expect(resumeAfter('9', '7')).toBe(9);
    expect(resumeAfter('', '7')).toBe(7);
    expect(() => resumeAfter('x', undefined)).toThrow(ValidationError);
    expect(() => resumeAfter(undefined, '-3')).toThrow(ValidationError);
  });

  it('derives stable, caller-scoped ids that fit a subject token', () => {
    const a = stableId('message', 'c1', 'alice', 'k');
    expect(a).toBe(stableId('message', 'c1', 'alice', 'k'));
    expect(a).not.toBe(stableId('message', 'c1', 'bob', 'k'));
    expect(isValidId(a)).toBe(true);
    expect(isValidId('a.b')).toBe(false);
    expect(isValidId('')).toBe(false);
    expect(isValidId('*')).toBe(false);
  });

  it('formats an SSE event on single lines even when the text has newlines', () => {
    expect(formatSse({ seq: 5, type: 'assistant.message', data: { text: 'a\nb\r\nc' } })).toBe('id: 5\nevent: assistant.message\ndata: {"text":"a\\nb\\r\\nc"}\n\n');
  });
});
