package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// paging is a listing command's paging flags: --limit items a page,
// --cursor to continue where a page left off, --all for every page.
type paging struct {
	limit  int
	cursor string
	all    bool
}

func (p *paging) flags(cmd *cobra.Command, defaultLimit, maxLimit int) {
	f := cmd.Flags()
	f.IntVar(&p.limit, "limit", defaultLimit, fmt.Sprintf("items a page (max %d)", maxLimit))
	f.StringVar(&p.cursor, "cursor", "", "continue a listing where a page left off (the cursor it printed)")
	f.BoolVar(&p.all, "all", false, "fetch every page, not just one")
}

// fetch calls page with the cursor, and again with each next cursor while
// --all asks for more; it returns the cursor after the last page fetched
// ("" when the listing is done). A page may be empty and still have a next
// one (a filter that matched nothing in the reads one page may make).
func (p *paging) fetch(ctx context.Context, page func(cursor string) (next string, err error)) (string, error) {
	cursor := p.cursor
	for {
		next, err := page(cursor)
		if err != nil {
			return "", err
		}
		if !p.all || next == "" {
			return next, nil
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		cursor = next
	}
}

// more tells how to continue a listing that has more pages.
func more(w io.Writer, next string) {
	if next != "" {
		fmt.Fprintf(w, "more: add --cursor %s (or --all)\n", next)
	}
}
