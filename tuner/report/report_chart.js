// The HTML report's drawing code (tune report --format html), embedded into the tune binary at
// build time (cmake/embed_text.cmake). The page inlines it after Chart.js and after the JSON
// report (the script element with id tune-data), so it loads nothing. It draws every chart from
// that JSON, then marks the page with how many charts exist (data-charts-rendered on the body)
// and each canvas with its drawn size (data-drawn-size), which the headless browser test reads
// back from the DOM. Plain ES5 without imports: it runs from a file:// page in any browser.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('tune-data').textContent);
  var charts = [];
  var stateColor = {COMPLETE: '#2b8a3e', RERUN: '#0ca678', PRUNED: '#f59f00', FAIL: '#e03131',
                    RUNNING: '#1c7ed6', WAITING: '#868e96'};
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  function add(id, config) {
    var canvas = document.getElementById(id);
    if (!canvas) return;
    charts.push(new Chart(canvas, config));
  }
  var search = data.trials.filter(function (t) { return t.rerun_of === null; });
  var done = search.filter(function (t) { return t.state === 'COMPLETE' && t.value !== null; });
  var maximize = data.direction === 'maximize';
  function axisLabel(title) { return {display: true, text: title}; }
  var objective = data.objective || 'objective';

  // Optimization history with the best-so-far line.
  var best = null, bestLine = [];
  done.forEach(function (t) {
    if (best === null || (maximize ? t.value > best : t.value < best)) best = t.value;
    bestLine.push({x: t.number, y: best});
  });
  add('chart-history', {
    type: 'scatter',
    data: {datasets: [
      {label: objective, data: done.map(function (t) { return {x: t.number, y: t.value}; }),
       backgroundColor: '#1c7ed6'},
      {label: 'best so far', data: bestLine, showLine: true, stepped: true, pointRadius: 0,
       borderColor: '#e03131', backgroundColor: '#e03131'}]},
    options: {scales: {x: {title: axisLabel('trial')}, y: {title: axisLabel(objective)}}}
  });

  // Parameter importance, each share beside its interval (a floating bar from low to high).
  add('chart-importance', {
    type: 'bar',
    data: {labels: data.importance.map(function (p) { return p.param; }),
           datasets: [{label: 'importance (fANOVA share)', backgroundColor: '#5f3dc4',
                       data: data.importance.map(function (p) { return p.share; })},
                      {label: 'interval', backgroundColor: '#d0bfff',
                       data: data.importance.map(function (p) { return [p.low, p.high]; })}]},
    options: {indexAxis: 'y', scales: {x: {min: 0, max: 1}}}
  });

  // One slice plot per parameter: objective against that parameter's value.
  data.params.forEach(function (axis, i) {
    var points = [];
    done.forEach(function (t) {
      var v = t.params[axis.name];
      if (v === undefined) return;
      var x = axis.kind === 'categorical' ? axis.choices.indexOf(v === null ? 'null' : String(v)) : v;
      points.push({x: x, y: t.value, trial: t.number});
    });
    var xScale = {title: axisLabel(axis.name)};
    if (axis.kind === 'categorical') {
      xScale.min = -0.5; xScale.max = axis.choices.length - 0.5;
      // One tick per choice, labelled with the choice.
      xScale.afterBuildTicks = function (scale) {
        scale.ticks = axis.choices.map(function (c, k) { return {value: k}; });
      };
      xScale.ticks = {callback: function (v) { return axis.choices[v]; }};
    } else if (axis.log) {
      xScale.type = 'logarithmic';
    }
    add('chart-slice-' + i, {
      type: 'scatter',
      data: {datasets: [{label: objective + ' vs ' + axis.name, data: points,
                         backgroundColor: '#1c7ed6'}]},
      options: {scales: {x: xScale, y: {title: axisLabel(objective)}}}
    });
  });

  // Parallel coordinates: one vertical axis per parameter plus the objective, each labelled with
  // its own values (a categorical axis with its choices, at their ticks; a numeric one with its
  // low, middle and high); one line per trial, coloured by its objective value on the scale the
  // legend under the chart shows, the best drawn last (on top).
  function short(v) { return Number(v.toPrecision(4)).toString(); }
  var values = done.map(function (t) { return t.value; });
  var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
  // Dark blue (best) to orange (worst): every stop stays visible on white.
  var palette = ['#0d0887', '#6a00a8', '#b12a90', '#e16462', '#fca636'];
  function hex(c) { return [1, 3, 5].map(function (i) { return parseInt(c.substr(i, 2), 16); }); }
  function colorAt(f) {  // f: 0 = best, 1 = worst
    var x = Math.min(Math.max(f, 0), 1) * (palette.length - 1);
    var i = Math.min(Math.floor(x), palette.length - 2), w = x - i;
    var a = hex(palette[i]), b = hex(palette[i + 1]);
    return 'rgb(' + a.map(function (v, k) { return Math.round(v + (b[k] - v) * w); }).join(',') + ')';
  }
  function badness(v) {
    if (!(hi > lo)) return 0;
    return maximize ? (hi - v) / (hi - lo) : (v - lo) / (hi - lo);
  }
  function clamp01(x) { return Math.min(Math.max(x, 0), 1); }
  function logOf(axis) { return axis.log && axis.low > 0; }
  function norm(axis, v) {
    if (axis.kind === 'categorical') {
      var k = axis.choices.indexOf(v === null ? 'null' : String(v));
      return axis.choices.length > 1 ? k / (axis.choices.length - 1) : 0.5;
    }
    if (axis.high === axis.low) return 0.5;
    if (logOf(axis))
      return clamp01((Math.log(v) - Math.log(axis.low)) / (Math.log(axis.high) - Math.log(axis.low)));
    return clamp01((v - axis.low) / (axis.high - axis.low));
  }
  function ticksOf(axis) {
    if (axis.kind === 'categorical')
      return axis.choices.map(function (c, k) {
        return {pos: axis.choices.length > 1 ? k / (axis.choices.length - 1) : 0.5, label: c};
      });
    if (axis.high === axis.low) return [{pos: 0.5, label: short(axis.low)}];
    var mid = logOf(axis) ? Math.sqrt(axis.low * axis.high) : (axis.low + axis.high) / 2;
    if (axis.kind === 'int') mid = Math.round(mid);
    return [axis.low, mid, axis.high].map(function (v) {
      return {pos: norm(axis, v), label: short(v)};
    });
  }
  var pcAxes = data.params.map(function (a) { return {name: a.name, ticks: ticksOf(a)}; });
  pcAxes.push({name: objective, ticks: hi > lo ? [lo, (lo + hi) / 2, hi].map(function (v) {
    return {pos: (v - lo) / (hi - lo), label: short(v)};
  }) : [{pos: 0.5, label: done.length ? short(lo) : ''}]});
  // Each axis drawn over the lines: its line, its ticks and their labels on a white halo.
  var axisLabels = {
    id: 'tuneAxisLabels',
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx, x = chart.scales.x, y = chart.scales.y;
      ctx.save();
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      ctx.textAlign = 'left';
      pcAxes.forEach(function (axis, i) {
        var px = x.getPixelForValue(i);
        ctx.strokeStyle = '#495057';
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.moveTo(px, y.getPixelForValue(0));
        ctx.lineTo(px, y.getPixelForValue(1));
        ctx.stroke();
        axis.ticks.forEach(function (tk) {
          var py = y.getPixelForValue(tk.pos);
          ctx.strokeStyle = '#495057';
          ctx.lineWidth = 1;
          ctx.beginPath();
          ctx.moveTo(px - 4, py);
          ctx.lineTo(px + 4, py);
          ctx.stroke();
          ctx.lineWidth = 3;
          ctx.strokeStyle = 'rgba(255,255,255,0.9)';
          ctx.strokeText(tk.label, px + 6, py);
          ctx.fillStyle = '#212529';
          ctx.fillText(tk.label, px + 6, py);
        });
      });
      ctx.restore();
    }
  };
  var ordered = done.slice().sort(function (a, b) { return badness(b.value) - badness(a.value); });
  add('chart-parallel', {
    type: 'line',
    data: {labels: pcAxes.map(function (a) { return a.name; }),
           datasets: ordered.map(function (t) {
      var color = colorAt(badness(t.value));
      var ys = data.params.map(function (a) { return norm(a, t.params[a.name]); });
      ys.push(hi > lo ? (t.value - lo) / (hi - lo) : 0.5);
      return {label: '#' + t.number, data: ys, borderColor: color, backgroundColor: color,
              borderWidth: 1.5, pointRadius: 1.5, tension: 0, trialValue: t.value};
    })},
    options: {layout: {padding: {right: 90, top: 8}},
              plugins: {legend: {display: false},
                        tooltip: {callbacks: {label: function (c) {
                          return c.dataset.label + ': ' + objective + ' ' + short(c.dataset.trialValue);
                        }}}},
              scales: {x: {ticks: {autoSkip: false}, grid: {display: false}},
                       y: {min: -0.04, max: 1.04, display: false}}},
    plugins: [axisLabels]
  });
  // The colour scale under the chart: a bar from the best value to the worst, labelled.
  var legend = document.getElementById('parallel-legend');
  if (legend && done.length) {
    var stops = [];
    for (var k = 0; k <= 10; ++k) stops.push(colorAt(k / 10));
    var parts = [['span', 'line colour: ' + objective + ', best'],
                 ['span', short(maximize ? hi : lo)], ['bar', ''],
                 ['span', short(maximize ? lo : hi)], ['span', 'worst']];
    parts.forEach(function (p) {
      var el = document.createElement('span');
      if (p[0] === 'bar') {
        el.className = 'bar';
        el.style.background = 'linear-gradient(to right, ' + stops.join(', ') + ')';
      } else {
        el.textContent = p[1];
      }
      legend.appendChild(el);
    });
  }

  // Timeline: one floating bar per trial from start to end, one dataset (color) per state.
  var timed = data.trials.filter(function (t) { return t.start_s !== null; });
  var states = Object.keys(stateColor).filter(function (st) {
    return timed.some(function (t) { return t.state === st; });
  });
  add('chart-timeline', {
    type: 'bar',
    data: {labels: timed.map(function (t) {
             return '#' + t.number + (t.rerun_of !== null ? " (re-run of #" + t.rerun_of + ")" : ""); }),
           datasets: states.map(function (st) {
             return {label: st, backgroundColor: stateColor[st], grouped: false, skipNull: true,
                     data: timed.map(function (t) {
                       if (t.state !== st) return null;
                       return [t.start_s, t.end_s !== null ? t.end_s : t.start_s]; })};
           })},
    options: {indexAxis: 'y',
              scales: {x: {title: axisLabel('seconds since the first trial started')}}}
  });

  document.querySelectorAll('canvas').forEach(function (c) {
    c.setAttribute('data-drawn-size', c.width + 'x' + c.height);
  });
  document.body.setAttribute('data-charts-rendered', String(charts.length));
})();
