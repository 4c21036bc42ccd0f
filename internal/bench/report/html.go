package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"
)

// The HTML report is one self-contained file: no script, no external
// style or font, every chart an inline SVG drawn here. It is also
// well-formed XML, which is what its test checks.

var modelColors = map[string]string{"push": "#1f77b4", "pull": "#d62728", "hybrid": "#2ca02c"}

var extraColors = []string{"#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

func colorOf(i int, name string) string {
	if c, ok := modelColors[name]; ok {
		return c
	}
	return extraColors[i%len(extraColors)]
}

// series is one line of a line chart.
type series struct {
	name   string
	color  string
	dashed bool
	dotted bool
	pts    [][2]float64
}

const (
	chartW, chartH = 640, 300
	padL, padR     = 70, 150
	padT, padB     = 34, 44
)

type svgBuf struct{ strings.Builder }

func (b *svgBuf) f(format string, args ...any) { fmt.Fprintf(&b.Builder, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := math.Floor(lo/step) * step; v <= hi+step/1e6; v += step {
		if v >= lo-step/1e6 {
			ticks = append(ticks, v)
		}
	}
	return ticks
}

// yTicks returns round ticks from 0 that reach at least top.
func yTicks(top float64) []float64 {
	t := niceTicks(0, top, 5)
	if last := t[len(t)-1]; last < top {
		step := top
		if len(t) > 1 {
			step = t[1] - t[0]
		}
		t = append(t, last+step)
	}
	return t
}

func tickLabel(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e4)/100)
	case a >= 1e3:
		return fmt.Sprintf("%gk", math.Round(v/10)/100)
	case a == 0:
		return "0"
	case a < 0.01:
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%g", math.Round(v*100)/100)
}

func svgOpen(b *svgBuf, title string) {
	b.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" font-family="sans-serif" font-size="11" fill="#333333">`, chartW, chartH, chartW, chartH)
	b.f(`<title>%s</title>`, esc(title))
	b.f(`<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`, padL, esc(title))
}

// lineChart draws series over a linear y axis and a linear or log x axis.
func lineChart(title, xLabel, yLabel string, ss []series, logX bool) template.HTML {
	var b svgBuf
	svgOpen(&b, title)
	x0, x1, y1 := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for _, p := range s.pts {
			x := p[0]
			if logX {
				x = math.Log10(math.Max(x, 1e-6))
			}
			x0, x1, y1 = math.Min(x0, x), math.Max(x1, x), math.Max(y1, p[1])
		}
	}
	if math.IsInf(x0, 0) {
		b.f(`<text x="%d" y="%d">no data</text></svg>`, padL, chartH/2)
		return template.HTML(b.String())
	}
	if logX {
		x0, x1 = math.Floor(x0), math.Ceil(x1)
	} else {
		x0 = math.Min(x0, 0)
	}
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= 0 {
		y1 = 1
	}
	yt := yTicks(y1)
	y1 = math.Max(y1, yt[len(yt)-1])
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	px := func(x float64) float64 {
		if logX {
			x = math.Log10(math.Max(x, 1e-6))
		}
		return float64(padL) + (x-x0)/(x1-x0)*pw
	}
	py := func(y float64) float64 { return float64(padT) + ph - y/y1*ph }

	// Axes and grid.
	for _, t := range yt {
		b.f(`<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, padL, py(t), float64(padL)+pw, py(t))
		b.f(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, py(t)+4, esc(tickLabel(t)))
	}
	var xt []float64
	if logX {
		for e := x0; e <= x1; e++ {
			xt = append(xt, math.Pow(10, e))
		}
	} else {
		xt = niceTicks(x0, x1, 6)
	}
	for _, t := range xt {
		b.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, px(t), padT, px(t), float64(padT)+ph)
		b.f(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(t), float64(padT)+ph+16, esc(tickLabel(t)))
	}
	b.f(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, float64(padL)+pw/2, chartH-6, esc(xLabel))
	b.f(`<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`, float64(padT)+ph/2, float64(padT)+ph/2, esc(yLabel))
	b.f(`<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#999999"/>`, padL, padT, pw, ph)

	for i, s := range ss {
		if len(s.pts) == 0 {
			continue
		}
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		dash := ""
		switch {
		case s.dashed:
			dash = ` stroke-dasharray="6 4"`
		case s.dotted:
			dash = ` stroke-dasharray="2 3"`
		}
		b.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, strings.Join(pts, " "), s.color, dash)
		ly := padT + 14 + 18*i
		b.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"%s/>`, float64(padL)+pw+10, ly-4, float64(padL)+pw+30, ly-4, s.color, dash)
		b.f(`<text x="%.1f" y="%d">%s</text>`, float64(padL)+pw+34, ly, esc(s.name))
	}
	b.f(`</svg>`)
	return template.HTML(b.String())
}

// barChart draws groups of bars, one bar per series in each group.
func barChart(title, unit string, groups, names []string, colors []string, vals [][]float64) template.HTML {
	var b svgBuf
	svgOpen(&b, title)
	top := 0.0
	for _, g := range vals {
		for _, v := range g {
			if !math.IsNaN(v) {
				top = math.Max(top, v)
			}
		}
	}
	if top <= 0 {
		top = 1
	}
	yt := yTicks(top)
	top = math.Max(top, yt[len(yt)-1])
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	py := func(y float64) float64 { return float64(padT) + ph - y/top*ph }
	for _, t := range yt {
		b.f(`<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, padL, py(t), float64(padL)+pw, py(t))
		b.f(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, py(t)+4, esc(tickLabel(t)))
	}
	b.f(`<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`, float64(padT)+ph/2, float64(padT)+ph/2, esc(unit))
	gw := pw / float64(max(len(groups), 1))
	bw := gw * 0.8 / float64(max(len(names), 1))
	for gi, g := range groups {
		gx := float64(padL) + gw*float64(gi) + gw*0.1
		for si := range names {
			v := vals[gi][si]
			if math.IsNaN(v) {
				continue
			}
			b.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`,
				gx+bw*float64(si), py(v), bw*0.92, float64(padT)+ph-py(v), colors[si], esc(g), esc(names[si]), esc(tickLabel(v)))
		}
		b.f(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, float64(padL)+gw*(float64(gi)+0.5), float64(padT)+ph+16, esc(g))
	}
	b.f(`<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#999999"/>`, padL, padT, pw, ph)
	for si, n := range names {
		ly := padT + 14 + 18*si
		b.f(`<rect x="%.1f" y="%d" width="14" height="10" fill="%s"/>`, float64(padL)+pw+10, ly-9, colors[si])
		b.f(`<text x="%.1f" y="%d">%s</text>`, float64(padL)+pw+30, ly, esc(n))
	}
	b.f(`</svg>`)
	return template.HTML(b.String())
}

// histSeries turns bins into a share-of-samples curve at each bin's
// geometric middle, so models with different sample counts compare.
func histSeries(name, color string, dashed bool, bins []Bin) series {
	var total uint64
	for _, b := range bins {
		total += b.Count
	}
	s := series{name: name, color: color, dashed: dashed}
	if total == 0 {
		return s
	}
	for _, b := range bins {
		s.pts = append(s.pts, [2]float64{math.Sqrt(b.LoMS * b.HiMS), 100 * float64(b.Count) / float64(total)})
	}
	return s
}

type chart struct {
	Title string
	SVG   template.HTML
	Note  string
}

// Charts returns every chart of the report, in page order.
func (r *Report) Charts() []chart {
	var out []chart
	names := r.ModelOrder
	colors := make([]string, len(names))
	for i, n := range names {
		colors[i] = colorOf(i, n)
	}
	nan := math.NaN()
	pick := func(v float64, ok bool) float64 {
		if !ok {
			return nan
		}
		return v
	}

	// Fan-out progress.
	// A pulled author writes no inbox: its model has no curve, and its
	// baseline is drawn only when no model fanned out.
	var fs []series
	fanned := hasAny(names, func(n string) bool { f := r.Models[n].Fanout; return f != nil && f.FannedOut })
	for i, n := range names {
		f := r.Models[n].Fanout
		if f == nil || (fanned && !f.FannedOut) {
			continue
		}
		if f.FannedOut && len(f.Progress) > 0 {
			fs = append(fs, series{name: n, color: colors[i], pts: append([][2]float64{{0, 0}}, f.Progress...)})
		}
		if f.FanoutBaselineSeconds > 0 {
			fs = append(fs, series{name: n + " baseline", color: colors[i], dashed: true, pts: [][2]float64{{0, 0}, {f.FanoutBaselineSeconds, float64(f.Followers)}}})
		}
	}
	if len(fs) > 0 {
		out = append(out, chart{"Fan-out progress", lineChart("Fan-out: inboxes written over time", "seconds since publish", "inbox writes", fs, false),
			"Solid: feedd_fanout_inbox_writes_total polled every 100 ms after one post; dashed: raw pipelined ZADD to as many fresh keys from the bench process (the baseline)."})
	}

	// Side by side.
	if hasAny(names, func(n string) bool { return r.Models[n].Fanout != nil }) {
		vals := [][]float64{make([]float64, len(names)), make([]float64, len(names))}
		for i, n := range names {
			f := r.Models[n].Fanout
			vals[0][i] = pick(f.FanoutWritesPerSec, f != nil && f.FannedOut)
			vals[1][i] = pick(f.FanoutBaselineWritesPerSec, f != nil)
		}
		out = append(out, chart{"Fan-out rate", barChart("Fan-out rate by model", "writes/s", []string{"feedd fan-out", "raw ZADD baseline"}, names, colors, vals), "A pulled author writes no inbox: no bar."})
	}
	if hasAny(names, func(n string) bool { return r.Models[n].Publish != nil }) {
		vals := [][]float64{make([]float64, len(names)), make([]float64, len(names))}
		for i, n := range names {
			p := r.Models[n].Publish
			vals[0][i] = pick(0, false)
			vals[1][i] = pick(0, false)
			if p != nil && p.ZeroFollowers != nil {
				vals[0][i] = p.ZeroFollowers.PublishP99MS
			}
			if p != nil && p.Celebrity != nil {
				vals[1][i] = p.Celebrity.PublishP99MS
			}
		}
		out = append(out, chart{"Publish p99", barChart("Publish latency p99 by model", "ms", []string{"0 followers", "celebrity"}, names, colors, vals), ""})
	}
	cohorts := sortedKeys(r.cohorts())
	if len(cohorts) > 0 {
		// Each cohort's bars: the models, then the Redis baseline and the
		// HTTP floor, each the mean over the models that measured it.
		refs := []func(*ReadResult) (p99, rps float64){
			func(rd *ReadResult) (float64, float64) { return rd.ReadBaselineP99MS, rd.ReadBaselineRPS },
			func(rd *ReadResult) (float64, float64) { return rd.ReadFloorP99MS, rd.ReadFloorRPS },
		}
		p99 := make([][]float64, len(cohorts))
		rps := make([][]float64, len(cohorts))
		for ci, c := range cohorts {
			p99[ci] = make([]float64, len(names)+len(refs))
			rps[ci] = make([]float64, len(names)+len(refs))
			for i, n := range names {
				p99[ci][i], rps[ci][i] = pick(0, false), pick(0, false)
				if rd := r.Models[n].Read[c]; rd != nil {
					p99[ci][i], rps[ci][i] = rd.ReadP99MS, rd.ReadRPS
				}
			}
			for j, ref := range refs {
				sumP99, sumRPS, k := 0.0, 0.0, 0
				for _, n := range names {
					if rd := r.Models[n].Read[c]; rd != nil {
						if l, q := ref(rd); q > 0 {
							sumP99, sumRPS, k = sumP99+l, sumRPS+q, k+1
						}
					}
				}
				p99[ci][len(names)+j], rps[ci][len(names)+j] = pick(sumP99/float64(k), k > 0), pick(sumRPS/float64(k), k > 0)
			}
		}
		bn := append(append([]string(nil), names...), "Redis baseline", "HTTP floor")
		bc := append(append([]string(nil), colors...), "#aaaaaa", "#dddddd")
		out = append(out, chart{"Read p99", barChart("Home-feed read p99 by cohort", "ms", cohorts, bn, bc, p99),
			"Redis baseline: the same reads issued directly (InboxPage + CachedPosts). HTTP floor: the same clients reading one of feedd's pages from a server that does nothing else. Each is the mean over models."})
		out = append(out, chart{"Read throughput", barChart("Home-feed reads per second by cohort", "requests/s", cohorts, bn, bc, rps), ""})

		paced := make([][]float64, len(cohorts))
		anyPaced := false
		for ci, c := range cohorts {
			paced[ci] = make([]float64, len(names))
			for i, n := range names {
				rd := r.Models[n].Read[c]
				paced[ci][i] = pick(0, false)
				if rd != nil && rd.ReadPacedRPSTarget > 0 && rd.ReadPacedRequests > 0 {
					paced[ci][i], anyPaced = rd.ReadPacedP99MS, true
				}
			}
		}
		if anyPaced {
			out = append(out, chart{"Read p99, paced", barChart("Home-feed read p99 at a paced rate, by cohort", "ms", cohorts, names, colors, paced),
				fmt.Sprintf("The same %d clients offering %.2f of each model's Redis baseline requests/s, open loop; latency from each request's due time, so a wait for a busy client counts. The closed-loop p99 above is at saturation, where latency is mostly queueing.",
					r.Settings.Concurrency, r.Settings.ReadPacedFraction)})
		}
	}
	if hasAny(names, func(n string) bool { return r.Models[n].Memory != nil }) {
		total := [][]float64{make([]float64, len(names)), make([]float64, len(names))}
		per := [][]float64{make([]float64, len(names))}
		for i, n := range names {
			mm := r.Models[n].Memory
			total[0][i], total[1][i], per[0][i] = nan, nan, nan
			if mm != nil {
				total[0][i] = float64(mm.RedisBytesTotal) / (1 << 20)
				total[1][i] = float64(mm.RedisInboxBytes) / (1 << 20)
				per[0][i] = pick(mm.RedisBytesPerEntry, mm.RedisEntries > 0)
			}
		}
		out = append(out, chart{"Redis memory", barChart("Redis memory by model", "MiB", []string{"all keys", "inbox keys"}, names, colors, total), ""})
		out = append(out, chart{"Bytes per entry", barChart("Redis bytes per inbox entry", "bytes", []string{"bytes/entry"}, names, colors, per), "Target: at most 40 bytes per entry."})
	}

	// Latency histograms.
	for _, c := range cohorts {
		var ss []series
		for i, n := range names {
			if rd := r.Models[n].Read[c]; rd != nil {
				ss = append(ss, histSeries(n, colors[i], false, rd.Histogram))
				if len(rd.BaselineHistogram) > 0 {
					ss = append(ss, histSeries(n+" baseline", colors[i], true, rd.BaselineHistogram))
				}
				if len(rd.PacedHistogram) > 0 {
					s := histSeries(n+" paced", colors[i], false, rd.PacedHistogram)
					s.dotted = true
					ss = append(ss, s)
				}
			}
		}
		out = append(out, chart{"Read latency " + c, lineChart("Read latency, "+c, "ms (log)", "% of requests", ss, true), "Solid: closed loop (saturation); dashed: the Redis baseline; dotted: paced, at a fixed rate."})
	}
	for _, who := range []string{"zero_followers", "celebrity"} {
		var ss []series
		for i, n := range names {
			p := r.Models[n].Publish
			if p == nil {
				continue
			}
			l := p.ZeroFollowers
			if who == "celebrity" {
				l = p.Celebrity
			}
			if l != nil {
				ss = append(ss, histSeries(n, colors[i], false, l.Histogram))
			}
		}
		if len(ss) > 0 {
			out = append(out, chart{"Publish latency " + who, lineChart("Publish latency, "+who, "ms (log)", "% of publishes", ss, true), ""})
		}
	}
	return out
}

func hasAny(names []string, f func(string) bool) bool {
	for _, n := range names {
		if f(n) {
			return true
		}
	}
	return false
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"f2":    func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"f0":    func(v float64) string { return fmt.Sprintf("%.0f", v) },
	"bytes": Bytes,
	"val": func(v *float64) string {
		if v == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.3g", *v)
	},
	"deref": func(b *bool) bool { return b != nil && *b },
	"met": func(m *bool) string {
		switch {
		case m == nil:
			return "n/a"
		case *m:
			return "yes"
		}
		return "NO"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>feedd bench report</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 10px; text-align: right; }
th { background: #f3f3f3; }
td.l, th.l { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; border: 1px solid #ddd; padding: 6px; }
figcaption { font-size: 12px; color: #555; max-width: 640px; }
.no { color: #b00; font-weight: bold; }
code { background: #f5f5f5; padding: 1px 4px; }
</style>
</head>
<body>
<h1>feedd bench</h1>
<p><code>{{.R.Command}}</code></p>
<p>Started {{.R.StartedAt.Format "2006-01-02 15:04:05 UTC"}}, took {{f0 .R.Seconds}} s.
Graph: {{.R.Graph.Users}} users, {{.R.Graph.Follows}} follows, {{.R.Graph.Posts}} posts,
{{.R.Graph.Celebrities}} celebrities with {{.R.Graph.CelebrityFollowers}} followers each ({{.R.Graph.Store}}).
Machine: {{.R.Settings.CPUs}} CPUs, {{.R.Settings.GoVersion}}, Redis {{.R.Settings.RedisVersion}}.
Reads: {{.R.Settings.Concurrency}} concurrent clients for {{f0 .R.Settings.DurationSeconds}} s per cohort, closed loop (saturation){{if gt .R.Settings.ReadPacedFraction 0.0}}, then paced at {{f2 .R.Settings.ReadPacedFraction}} of the Redis baseline's rate{{end}}.
Fan-out baseline: {{.R.Settings.BaselineGoroutines}} goroutines, pipelines of {{.R.Settings.BaselinePipeline}} ZADDs.</p>

<h2>Targets</h2>
<table>
<tr><th class="l">target</th><th>value</th><th>goal</th><th>met</th><th class="l">detail</th></tr>
{{range .R.Targets}}<tr><td class="l">{{.Name}}</td><td>{{val .Value}}</td><td>{{.Goal}}</td><td{{if .Met}}{{if not (deref .Met)}} class="no"{{end}}{{end}}>{{met .Met}}</td><td class="l">{{.Detail}}</td></tr>
{{end}}</table>

<h2>Figures</h2>
<pre>{{.Table}}</pre>

<h2>Charts</h2>
<div class="charts">
{{range .Charts}}<figure>{{.SVG}}{{if .Note}}<figcaption>{{.Note}}</figcaption>{{end}}</figure>
{{end}}</div>
{{if .R.Notes}}<h2>Notes</h2><ul>{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body>
</html>
`))

// WriteHTML writes the self-contained HTML report.
func (r *Report) WriteHTML(w io.Writer) error {
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		return err
	}
	return reportTmpl.Execute(w, struct {
		R      *Report
		Table  string
		Charts []chart
	}{r, table.String(), r.Charts()})
}
