package console

import (
	"fmt"
	"math"
	"time"
)

// The overview's chart: incidents opened per hour over 48 hours as an SVG
// drawn on the server (the console runs no script), with labelled axes:
// hours (UTC) along the bottom, every 6 hours and each day's start
// named; incidents up the side on a scale of round steps.

// Chart geometry, in the SVG's user units.
const (
	chartLeft, chartTop  = 48, 12
	chartSlot, chartBarW = 11, 8
	chartHeight          = 150
	chartHours           = 48
	chartWidth           = chartLeft + chartHours*chartSlot + 16
	chartBottom          = chartTop + chartHeight
	chartViewHeight      = chartBottom + 48
)

// chart is what the overview template draws.
type chart struct {
	Width, ViewHeight, Left, Right, Top, Bottom int
	Bars                                        []chartBar
	YTicks                                      []chartTick
	XTicks                                      []chartTick
	Total, Peak                                 int
	// XLabelX, YLabelY place the axes' titles.
	XLabelX, XLabelY, YLabelY int
	From, To                  time.Time
}

type chartBar struct {
	X, Y, H, W int
	Tip        string
}

type chartTick struct {
	// Pos is the tick's x (XTicks) or y (YTicks); Label its text; Day
	// marks a day's start (drawn as a grid line across the plot).
	Pos   int
	Label string
	Day   bool
}

// incidentChart lays out the counts of the 48 hours from since.
func incidentChart(since time.Time, counts map[time.Time]int) chart {
	c := chart{Width: chartWidth, ViewHeight: chartViewHeight, Left: chartLeft, Right: chartLeft + chartHours*chartSlot,
		Top: chartTop, Bottom: chartBottom, From: since, To: since.Add(chartHours * time.Hour)}
	for i := range chartHours {
		n := counts[since.Add(time.Duration(i)*time.Hour)]
		c.Total += n
		c.Peak = max(c.Peak, n)
	}
	top, step := scale(c.Peak)
	for i := range chartHours {
		h := since.Add(time.Duration(i) * time.Hour)
		n := counts[h]
		height := int(math.Round(float64(n) * chartHeight / float64(top)))
		x := chartLeft + i*chartSlot + (chartSlot-chartBarW)/2
		c.Bars = append(c.Bars, chartBar{X: x, Y: chartBottom - height, H: height, W: chartBarW,
			Tip: fmt.Sprintf("%s–%s UTC: %d %s", h.Format("Jan 2 15:00"), h.Add(time.Hour).Format("15:00"), n, plural(n, "incident", "incidents"))})
		switch {
		case h.Hour() == 0:
			c.XTicks = append(c.XTicks, chartTick{Pos: chartLeft + i*chartSlot, Label: h.Format("Jan 2"), Day: true})
		case h.Hour()%6 == 0:
			c.XTicks = append(c.XTicks, chartTick{Pos: chartLeft + i*chartSlot, Label: h.Format("15:04")})
		}
	}
	for v := 0; v <= top; v += step {
		c.YTicks = append(c.YTicks, chartTick{Pos: chartBottom - v*chartHeight/top, Label: fmt.Sprint(v)})
	}
	c.XLabelX, c.XLabelY, c.YLabelY = chartLeft+chartHours*chartSlot/2, chartBottom+40, chartTop+chartHeight/2
	return c
}

// scale is the y axis's top and step for a peak: round steps (1, 2, 5 ×
// 10ⁿ), at most 5 of them, the top at or above the peak.
func scale(peak int) (top, step int) {
	if peak <= 4 {
		return max(peak, 1), 1
	}
	raw := float64(peak) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = int(m * mag)
			break
		}
	}
	top = (peak + step - 1) / step * step
	return top, step
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
