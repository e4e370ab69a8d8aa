/**
 * The page resource of spec §2.1, one entry per field, in the spec's order. This catalogue drives
 * the table type, the JSON schemas (validation, serialization, OpenAPI, reference descriptions)
 * and which fields the system alone writes.
 */
import type { FieldSpec } from '../shared/fields.js';

export const PAGE_FIELDS = {
  page: { kind: 'serial', description: 'System ID of the page, unique' },
  page_usertitle: { kind: 'text', description: 'Page H1 heading' },
  page_menuname: { kind: 'text', description: 'Menu button text' },
  page_alias: {
    kind: 'text',
    description: 'SEO filename for the page URL; generated from the title when absent, unique within the website',
  },
  page_parent: { kind: 'int', description: 'ID of the parent page; 0 for a top-level page' },
  page_order: { kind: 'int', description: 'Position of the page in the menu or in a list' },
  page_issubmenu: { kind: 'int', description: '0 if not a sub menu; 1 or more if a sub menu (hint of how many sub pages)' },
  page_html_content: { kind: 'text', description: 'HTML main body; often empty for pages with special functionality chosen by wgt_id' },
  page_html_intro: { kind: 'text', description: 'HTML introduction' },
  page_html_footer: { kind: 'text', description: 'HTML footer' },
  page_html_zone2: { kind: 'text', description: 'Secondary content area, template specific' },
  page_html_scripts: { kind: 'text', description: 'Scripts and code placed on the page, separate from the content' },
  page_summary: { kind: 'text', description: 'SEO summary' },
  page_metatitle: { kind: 'text', description: 'SEO title' },
  page_keywords: { kind: 'text', description: 'SEO keywords' },
  page_dt_begin: { kind: 'timestamp', description: 'Set automatically when the page is created (YYYY-MM-DD HH:MM:SS, UTC)' },
  page_lastmodified: { kind: 'timestamp', description: 'When the page was last modified (YYYY-MM-DD HH:MM:SS, UTC)' },
  wgt_id: { kind: 'int', description: 'ID of the content theme or page type' },
  page_privacy: { kind: 'int', description: 'Minimum security level of users allowed to view; 0 means public' },
  page_privacy_groupid: { kind: 'int', description: 'Member group ID allowed to view; 0 means public' },
  page_addmembergroupname: { kind: 'text', description: 'Member group to which new members are added' },
  page_windowsize: { kind: 'int', description: 'For list pages, number of items shown at a time' },
  page_sorting: { kind: 'text', description: 'Overrides the default sort mode of lists on the page' },
  page_summary_text_length: { kind: 'int', description: 'Truncation length when lists include summary text' },
  page_target: { kind: 'text', description: 'Link target for links in lists (for example _blank)' },
  page_css: { kind: 'text', description: 'Custom CSS for this page only' },
  page_bg: { kind: 'text', description: 'Custom background image' },
  page_banner: { kind: 'text', description: 'Path of the banner image' },
  page_banner_title: { kind: 'text', description: 'Banner title' },
  page_banner_url: { kind: 'text', description: 'Link target of the banner' },
  page_titleimg: { kind: 'text', description: 'Image path replacing the page heading' },
  page_menuimg: { kind: 'text', description: 'Image replacing the menu button text' },
  page_ogimage: { kind: 'text', description: 'Social media image path' },
  page_submenu_desc: { kind: 'text', description: 'Summary shown for a page of type submenu' },
  page_submenu_img: { kind: 'text', description: 'Image shown for a gallery-submenu page (a src path)' },
  page_alturl: { kind: 'text', description: 'Alternative link replacing the default system URL' },
  page_alturlsub: { kind: 'text', description: 'Alternative link URL for sub page content such as lists' },
  page_more_info_label: { kind: 'text', description: 'Link text leading to a sub page; when absent, no more-links are made' },
  page_accesskey: { kind: 'text', description: 'Access key for fast menu access' },
  page_alttemplate: { kind: 'text', description: 'Alternative design template, a single letter A-F (or empty)' },
  page_reference_code: { kind: 'text', description: 'Text ID used in limited situations' },
  page_duplicationid: { kind: 'int', description: 'ID of the original page when this page was duplicated' },
  page_crop_width: { kind: 'int', description: 'Maximum width of images uploaded to the page' },
  page_crop_height: { kind: 'int', description: 'Maximum height of images uploaded to the page' },
  page_crop_aspect: { kind: 'bool', description: 'Aspect rule for cropping full-size images' },
  page_crop_aspect_thumbs: { kind: 'bool', description: 'Additional rules for thumbnail generation' },
  page_thumb_dimensions: { kind: 'text', description: 'Desired thumbnail dimensions, form WIDTHxHEIGHT (or empty)' },
  page_json_schema: { kind: 'text', description: 'Custom JSON schema for the page' },
  page_json_config: { kind: 'text', description: 'Additional configuration parameters' },
  page_notify: {
    kind: 'text',
    description: 'Address that receives e-mail notifications from the page (e-mail format validated; or empty)',
  },
  page_notify_subject: { kind: 'text', description: 'Subject of those notifications' },
  page_replyaddress: { kind: 'text', description: 'Overrides the website default reply address' },
  page_autorespond_subject: { kind: 'text', description: 'Optional subject of the auto-responder e-mail' },
  page_enquiryform_heading: { kind: 'text', description: 'Title of the enquiry form, replacing the default' },
  page_addressautocomplete: { kind: 'text', description: 'Enables auto-complete of address fields' },
  page_forum_service: { kind: 'text', description: 'Whether a comments/forum is added to the page or its sub pages' },
  page_social_sharing: { kind: 'text', description: 'Social sharing widgets added to the footer' },
  page_recapture: { kind: 'text', description: 'Value t enables the human-verification feature' },
} as const satisfies Record<string, FieldSpec>;

export type PageField = keyof typeof PAGE_FIELDS;

/** The HTML bodies: what a list with allFields=false leaves out, the bulk of most records. */
export const PAGE_BODY_FIELDS = [
  'page_html_content',
  'page_html_intro',
  'page_html_footer',
  'page_html_zone2',
  'page_html_scripts',
] as const satisfies readonly PageField[];

/** Fields only the system writes; a client may send them back unchanged and they are ignored. */
export const PAGE_SYSTEM_FIELDS = ['page', 'page_dt_begin', 'page_lastmodified'] as const satisfies readonly PageField[];
