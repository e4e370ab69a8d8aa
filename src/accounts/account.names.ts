import { BadRequestError } from '../errors.js';

/** The most characters of an API credential's label and of a website's name. */
export const LABEL_MAX = 100;
const SITE_NAME_MAX = 100;

/**
 * An API credential's label, trimmed: 1 to 100 characters, so that its owner can tell which one
 * to revoke. The console's form and `cms apikey create` both end here (through createCredential).
 */
export function credentialLabel(raw: string): string {
  const label = raw.trim();
  if (!label || label.length > LABEL_MAX) throw new BadRequestError(`Give the credential a label of 1 to ${LABEL_MAX} characters.`);
  return label;
}

/** A website's name, trimmed: 1 to 100 characters, as every page that names the website shows it. */
export function siteName(raw: string): string {
  const name = raw.trim();
  if (!name) throw new BadRequestError('A website needs a name.');
  if (name.length > SITE_NAME_MAX) throw new BadRequestError(`A website name has at most ${SITE_NAME_MAX} characters.`);
  return name;
}
