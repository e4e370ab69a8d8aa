import assert from 'node:assert/strict';
import { test } from 'node:test';
import { htmlToText } from './filters.js';

test('htmlToText decodes every named and numeric character reference', () => {
  assert.equal(htmlToText('Caf&eacute; &amp; cr&#232;me'), 'Café & crème');
  assert.equal(htmlToText('&#233;t&#xE9; &#XE9;'), 'été é');
  assert.equal(htmlToText('Wait&hellip; &ldquo;quoted&rdquo; &euro;5 &Omega;'), 'Wait… “quoted” €5 Ω');
  assert.equal(htmlToText('&lt;b&gt; &quot;x&quot; &#39;y&#39; &apos;z&apos;'), `<b> "x" 'y' 'z'`);
  assert.equal(htmlToText('&#128512;'), '😀', 'references beyond the BMP');
});

test('htmlToText decodes what browsers decode, and leaves other ampersands alone', () => {
  assert.equal(htmlToText('fish &amp chips'), 'fish & chips', 'a legacy reference without its semicolon');
  assert.equal(htmlToText('AT&T &unknown; a & b'), 'AT&T &unknown; a & b');
});

test('htmlToText strips tags, scripts and styles, then folds whitespace', () => {
  assert.equal(htmlToText('<h2>Bakers</h2><p>Anna&nbsp;&nbsp;bakes\n\tbread</p>'), 'Bakers Anna bakes bread');
  assert.equal(htmlToText('<script>var a = "&eacute;";</script>x<style>p { color: red }</style>y'), 'x y');
  assert.equal(htmlToText('<p title="&eacute;t&eacute;">text</p>'), 'text', 'attribute values are not text');
  assert.equal(htmlToText('&lt;script&gt;alert(1)&lt;/script&gt;'), '<script>alert(1)</script>', 'escaped markup is text');
  assert.equal(htmlToText('  <br>  '), '');
});
