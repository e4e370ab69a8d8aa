/**
 * How many pages and blogs a website has, kept by triggers in the transaction of every insert and
 * delete (migration 0010): an unfiltered list's total. A website without a row has none of either.
 */
export interface ContentTotalsTable {
  site_id: number;
  pages: number;
  blogs: number;
}
