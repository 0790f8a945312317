package console

import "net/url"

// pager is a listing page's links to the pages after and before it: the
// page's own URL with the listing's cursor in place of the one it was
// reached with ("" when there is no such page).
type pager struct {
	Next, Prev string
}

// pagerOf builds the links of a page at path with query q (its filter)
// and the listing's next and prev cursors.
func pagerOf(path string, q url.Values, next, prev string) pager {
	link := func(cursor string) string {
		if cursor == "" {
			return ""
		}
		nq := url.Values{}
		for k, v := range q {
			if k != "cursor" {
				nq[k] = v
			}
		}
		nq.Set("cursor", cursor)
		return Prefix + path + "?" + nq.Encode()
	}
	return pager{Next: link(next), Prev: link(prev)}
}
