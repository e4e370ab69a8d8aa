import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstFree, slugify } from './slug.js';

test('other scripts are transliterated into readable ASCII', () => {
  assert.equal(slugify('Straße Øl', 'page'), 'strasse-ol');
  assert.equal(slugify('Привет мир', 'page'), 'privet-mir');
  assert.equal(slugify('Καλημέρα κόσμε', 'page'), 'kalimera-kosme');
  assert.equal(slugify('Crème Brûlée!', 'page'), 'creme-brulee');
  assert.equal(slugify('Łódź', 'page'), 'lodz');
});

test('a slug is lower-case letters and digits joined by single dashes', () => {
  assert.equal(slugify('  Shop: 50% OFF -- today!  ', 'page'), 'shop-50-off-today');
  assert.equal(slugify('snake_case and/or path\\name', 'page'), 'snake-case-and-or-path-name');
  assert.equal(slugify('iPhone tips', 'page'), 'iphone-tips', 'a camel-cased word stays one word');
  assert.equal(slugify('Ｆｕｌｌｗｉｄｔｈ ﬁne', 'page'), 'fullwidth-fine', 'compatibility forms become their plain letters');
  for (const title of ['Straße Øl', 'Привет мир', 'a -- b', '¿Qué tal?', 'x\ny\tz']) {
    assert.match(slugify(title, 'page'), /^[a-z0-9]+(-[a-z0-9]+)*$/, title);
  }
});

test('symbols separate words and add none', () => {
  assert.equal(slugify('Salz & Pfeffer', 'page'), 'salz-pfeffer');
  assert.equal(slugify('I ♥ Berlin', 'page'), 'i-berlin');
});

test('a slug is at most 80 characters and does not end in a dash when cut', () => {
  assert.equal(slugify('a'.repeat(100), 'page'), 'a'.repeat(80));
  const cutAtDash = `${'a'.repeat(79)} bcd`;
  assert.equal(slugify(cutAtDash, 'page'), 'a'.repeat(79));
  assert.equal(slugify('Щ'.repeat(30), 'page').length, 80, 'the limit counts the transliterated text');
});

test('nothing usable left gives the fallback', () => {
  assert.equal(slugify('', 'page'), 'page');
  assert.equal(slugify('!!!', 'page'), 'page');
  assert.equal(slugify('😀🎉', 'blog'), 'blog');
  assert.equal(slugify(' - ', 'blog'), 'blog');
});

test('firstFree numbers a taken base from 2', () => {
  assert.equal(firstFree('home', []), 'home');
  assert.equal(firstFree('home', ['home']), 'home-2');
  assert.equal(firstFree('home', ['home', 'home-2', 'home-4']), 'home-3');
});
