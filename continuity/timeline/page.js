"use strict";
(function () {
  var data = JSON.parse(document.getElementById("timeline-data").textContent);
  var chart = document.getElementById("chart");
  var detail = document.getElementById("detail");
  var filter = document.getElementById("filter");
  var shownCount = document.getElementById("shown-count");
  var marks = Array.prototype.slice.call(chart.querySelectorAll(".mark"));
  var texts = marks.map(function (mark) {
    return (mark.getAttribute("data-k") + " " + mark.textContent).toLowerCase();
  });
  var selected = null;

  function show(mark) {
    if (selected) { selected.classList.remove("selected"); }
    selected = mark;
    mark.classList.add("selected");
    // C1 controls and bidi marks as their JSON escapes: shown raw, one could reorder the text around it
    detail.textContent = JSON.stringify(data[Number(mark.getAttribute("data-i"))], null, 2).replace(
      /[\u0080-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
      function (c) { return "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4); });
  }

  chart.addEventListener("click", function (event) {
    var mark = event.target.closest ? event.target.closest(".mark") : null;
    if (mark) { show(mark); }
  });
  chart.addEventListener("keydown", function (event) {
    var mark = event.target.closest ? event.target.closest(".mark") : null;
    if (mark && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); show(mark); }
  });
  filter.addEventListener("input", function () {
    var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    for (var i = 0; i < marks.length; i++) {
      var hit = words.every(function (word) { return texts[i].indexOf(word) >= 0; });
      marks[i].classList.toggle("hidden", !hit);
      if (hit) { shown++; }
    }
    shownCount.textContent = String(shown);
  });
}());
