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

  // Parameter importance.
  add('chart-importance', {
    type: 'bar',
    data: {labels: data.importance.map(function (p) { return p.param; }),
           datasets: [{label: 'importance (fANOVA share)', backgroundColor: '#5f3dc4',
                       data: data.importance.map(function (p) { return p.share; })}]},
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

  // Parallel coordinates: one normalised axis per parameter plus the objective; one line per
  // trial, darker for better values.
  var lo = Math.min.apply(null, done.map(function (t) { return t.value; }));
  var hi = Math.max.apply(null, done.map(function (t) { return t.value; }));
  function norm(axis, v) {
    if (axis.kind === 'categorical') {
      var k = axis.choices.indexOf(v === null ? 'null' : String(v));
      return axis.choices.length > 1 ? k / (axis.choices.length - 1) : 0.5;
    }
    if (axis.high === axis.low) return 0.5;
    if (axis.log) return (Math.log(v) - Math.log(axis.low)) / (Math.log(axis.high) - Math.log(axis.low));
    return (v - axis.low) / (axis.high - axis.low);
  }
  var pcLabels = data.params.map(function (a) { return a.name; }).concat([objective]);
  add('chart-parallel', {
    type: 'line',
    data: {labels: pcLabels, datasets: done.map(function (t) {
      var goodness = hi > lo ? (maximize ? (t.value - lo) / (hi - lo) : (hi - t.value) / (hi - lo)) : 1;
      var color = 'rgba(28,126,214,' + (0.15 + 0.85 * goodness).toFixed(3) + ')';
      var ys = data.params.map(function (a) { return norm(a, t.params[a.name]); });
      ys.push(hi > lo ? (t.value - lo) / (hi - lo) : 0.5);
      return {label: '#' + t.number, data: ys, borderColor: color, backgroundColor: color,
              pointRadius: 2, tension: 0};
    })},
    options: {plugins: {legend: {display: false}},
              scales: {y: {min: 0, max: 1, title: axisLabel('normalised value')}}}
  });

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
