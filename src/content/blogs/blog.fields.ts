/**
 * The blog (article) resource of spec §2.2, one entry per field, in the spec's order, followed by
 * the fields the spec's sample object shows without a definition (their meaning here is our
 * decision, see docs/blogs.md). Like the page catalogue, it drives the table type, the schemas and
 * the reference descriptions. Three fields are `text` in storage but have a richer JSON form, set
 * in blog.schemas.ts: info_show ("Y"/"N"), info_img_json (object or null), info_more_images (array).
 */
import type { FieldSpec } from '../shared/fields.js';

export const BLOG_FIELDS = {
  info_id: { kind: 'serial', description: 'Primary ID of the blog' },
  page: { kind: 'int', description: 'ID of the page that holds the blog; a page of the same website, required on insert' },
  info_title: { kind: 'text', description: 'Title' },
  info_fulltext: { kind: 'text', description: 'Full HTML content' },
  info_summary: { kind: 'text', description: 'Short summary paragraph' },
  info_metatitle: { kind: 'text', description: 'SEO title' },
  info_filename: {
    kind: 'text',
    description: 'SEO filename; generated from the title when absent, unique within the website',
  },
  info_tags: { kind: 'text', description: 'Comma-separated tags for cross navigation between related blogs' },
  info_show: {
    kind: 'text',
    description: 'Y when visible, N otherwise; default Y. Accepted as true/false, 1/0 or "Y"/"N"',
  },
  info_hideuntil: { kind: 'text', description: 'Hide the story until this date (YYYY-MM-DD, or empty)' },
  info_date: { kind: 'text', description: 'Official publish date (YYYY-MM-DD, or empty); today when absent on insert' },
  info_timestamp: {
    kind: 'timestamp',
    description: 'When the blog was created or last changed (YYYY-MM-DD HH:MM:SS, UTC); an update that changes nothing keeps it',
  },
  info_order: { kind: 'int', description: 'Order in a list, from 1 upwards (0: not ordered)' },
  info_img: { kind: 'text', description: 'Primary image path, usually /images/…' },
  info_img_json: {
    kind: 'text',
    description: 'Metadata of the uploaded primary image: width, height, bytes, type; null when unknown',
  },
  info_more_images: { kind: 'text', description: 'Additional images: an array of image paths' },
  info_object: { kind: 'text', description: 'Additional object, usually a video embed script' },
  info_blog_comments_on: { kind: 'bool', description: 'Whether comments are enabled' },
  info_comment_count: { kind: 'int', description: 'Number of comments made' },
  info_authorid: { kind: 'int', description: 'ID of the member record of the author; when used, the author name is public' },
  info_location: { kind: 'text', description: 'Address in common postal format' },
  info_url: { kind: 'text', description: 'Reference link URL' },
  info_linktext: { kind: 'text', description: 'Text of the info_url link' },
  info_linkrel: { kind: 'text', description: 'rel setting of the info_url link' },
  info_email: {
    kind: 'text',
    description: 'When set, an enquiry form is added at the bottom of the blog (e-mail format validated; or empty)',
  },
  info_enquiryform: { kind: 'text', description: 'Optional custom HTML enquiry form replacing the default' },
  info_enquiry_config: { kind: 'text', description: 'Configuration of the enquiry form' },
  info_leadmagnet_followup: { kind: 'text', description: 'Lead magnet follow-up content' },
  info_leadmagnet_config: { kind: 'text', description: 'Lead magnet follow-up configuration' },
  info_duplicationid: { kind: 'int', description: 'ID of the record this one was duplicated from' },
  // Sample-object fields without a definition in the spec.
  info_category1: { kind: 'int', description: 'First category ID (0: none)' },
  info_category2: { kind: 'int', description: 'Second category ID (0: none)' },
  info_category3: { kind: 'int', description: 'Third category ID (0: none)' },
  info_blogcnt: { kind: 'int', description: 'View counter kept by the website; written by the system only' },
  info_re: { kind: 'text', description: 'Free text kept with the blog (legacy field, stored as sent)' },
  info_groupid: { kind: 'int', description: 'Member group ID associated with the blog (legacy field; no effect on publicContentOnly)' },
  site_search_keywords: { kind: 'text', description: 'Extra keywords for the website search' },
  site_search_keywords_updated: {
    kind: 'timestamp',
    description: 'When site_search_keywords last changed (YYYY-MM-DD HH:MM:SS, UTC; empty if never set)',
  },
  cid: { kind: 'int', description: 'ID of the website that owns the blog' },
} as const satisfies Record<string, FieldSpec>;

export type BlogField = keyof typeof BLOG_FIELDS;

/** The HTML bodies (the text, an embed, a custom form): what a list with allFields=false leaves out. */
export const BLOG_BODY_FIELDS = ['info_fulltext', 'info_object', 'info_enquiryform'] as const satisfies readonly BlogField[];

/** Fields only the system writes; a client may send them back unchanged and they are ignored. */
export const BLOG_SYSTEM_FIELDS = [
  'info_id',
  'info_timestamp',
  'info_img_json',
  'info_comment_count',
  'info_blogcnt',
  'cid',
  'site_search_keywords_updated',
] as const satisfies readonly BlogField[];
