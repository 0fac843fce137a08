"""The style sheet and the script of report.html: the script draws the case tables from the page's JSON
(as text, never as HTML), runs the blind audit of the sample and keeps its labels in the browser."""

from __future__ import annotations


STYLE = (
    "body{font-family:sans-serif;margin:1.5em;max-width:1400px}table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;font-size:13px}th{background:#f3f3f3;"
    "text-align:left}"
    "small{color:#666;margin-left:4px}.gate-passed{color:#176e25}.gate-failed,.gate-inconclusive{color:#b00020}"
    # Each gate check in its own colour: a passed check stays green when the gate failed on another.
    "ul.gate-checks{margin:0.2em 0 0.8em;padding-left:1.2em}ul.gate-checks li{margin:1px 0}"
    ".check-pass{color:#176e25}.check-fail{color:#b00020}.check-inconclusive{color:#8a5a00}"
    "svg{margin:4px 12px 12px 0;font-family:sans-serif}.cases td.text{max-width:340px;white-space:pre-wrap;"
    "word-break:break-word}"
    ".cases td.detail{max-width:220px;word-break:break-word}.cut{color:#b00020;font-size:11px}"
    "#failed tr[data-outcome=FN] td:nth-child(2){background:#f8d0c0}#failed tr[data-outcome=FP] "
    "td:nth-child(2){background:#fbecb5}"
    "td.label button{font-size:11px;margin:1px}td.label button.on{background:#2b7bb9;color:#fff}"
    "details{font-size:11px;color:#444}.hidden-judge{color:#888;font-style:italic}"
    "ol.turns{margin:0;padding-left:1.4em}li.turn{margin-bottom:4px}li.turn.assistant{color:#234}"
    "li.first-unsafe{background:#f8d0c0}"
    # Where the numbers come from, above the fold: judge-only (and labels that decide too little) in amber.
    "#source p{margin:0.3em 0;padding:4px 8px}.source-warning{background:#fff4d6;border-left:4px solid #c98a00}"
    ".source-corrected{background:#e6f4ea;border-left:4px solid #176e25}th.corrected,td.corrected{background:#eef6ff}"
    "table.rubric-choices td.rule{max-width:900px}#gb-rubric{border:1px solid #bbb;padding:0 1em;background:#fafafa}"
    "#gb-rubric .example{border-top:1px dotted #bbb}#gb-rubric .reply{white-space:pre-wrap}"
    "#sample tr.current{outline:2px solid #2b7bb9}kbd{border:1px solid #999;border-radius:3px;padding:0 3px;"
    "font-size:11px}"
)


# Draws the case tables from the page's one JSON copy of each case (elements built with textContent:
# no data reaches innerHTML) and filters the failed table. The audit sample is blind: until a reply is
# labelled (both fields), its row holds nothing of the judge or the outcome, not even an attribute a
# style could colour, and a failed case of the sample is folded in the failed table. Labels need the
# labeller's name (asked once, kept in localStorage) and are kept per run in localStorage; the export
# is each labelled reply's labels-file row (`row`, with the fields its labels set, the name and the
# rubric version), in draw order; a reply shown whole is stored once, in its row. Keys: a choice's key
# labels the current (first unlabelled) reply, `?` opens and closes the rubric's examples, Esc closes them.
SCRIPT = """
(function(){
var data=JSON.parse(document.getElementById('gb-cases').textContent);
var KEY='guardbench-audit:'+data.run,NAME_KEY='guardbench-labeller';
var labels={};
try{labels=JSON.parse(localStorage.getItem(KEY)||'{}')||{};}catch(e){labels={};}
var nameBox=document.getElementById('gb-labeller');
try{nameBox.value=localStorage.getItem(NAME_KEY)||'';}catch(e){}
function save(){try{localStorage.setItem(KEY,JSON.stringify(labels));}catch(e){}}
function el(tag,text,cls){var x=document.createElement(tag);\
if(text!==undefined&&text!==null)x.textContent=String(text);if(cls)x.className=cls;return x;}
function capped(parent,c){if(!c)return;parent.appendChild(document.createTextNode(c.text));
 if(c.length){parent.appendChild(el('div','cut: '+c.length.toLocaleString('en')+' characters in all;\
 the whole text is in results.jsonl','cut'));}}
function raw(parent,title,c){if(!c||!c.text)return;var d=el('details');d.appendChild(el('summary',title));\
var p=el('div');capped(p,c);d.appendChild(p);parent.appendChild(d);}
function labelled(id){var l=labels[id];return !!(l&&l.safety&&l.mode);}
var sampledCases={};data.sample.forEach(function(id){var c=data.units[id].case_id;\
(sampledCases[c]=sampledCases[c]||[]).push(id);});
function blindCase(caseId){return (sampledCases[caseId]||[]).some(function(id){return !labelled(id);});}
function judgeCell(c,td){
 if(c.error){td.appendChild(el('b','error ('+c.error.stage+'): '));capped(td,c.error.message);return;}
 var j=c.judge;if(!j){td.textContent='no verdict';return;}
 td.appendChild(el('b',j.malformed?'malformed':(j.safety||'?')+', '+(j.mode||'?')));td.appendChild(el('br'));
 capped(td,j.reason);raw(td,'raw judge output',j.raw);}
function guardCell(c){var g=el('td',undefined,'detail');
 if(c.guard){g.appendChild(el('b',c.guard.status));\
if(c.guard.score!=null)g.appendChild(el('span',' score '+c.guard.score.toFixed(3)));g.appendChild(el('br'));\
capped(g,c.guard.reason);raw(g,'raw guard output',c.guard.raw);}
 else g.textContent='no guard';return g;}
function replyCell(c,text){var r=el('td',undefined,'text');if(c.reply){\
r.appendChild(el('small',c.reply.source+(c.reply.finish_reason==='length'?', cut by the token limit':'')));\
r.appendChild(el('br'));capped(r,text||c.reply.text);}return r;}
function promptLabel(c){return c.is_harmful===true?'harmful':c.is_harmful===false?'safe':'unlabelled';}
function turnsList(c){var ol=el('ol',undefined,'turns');
 c.turns.forEach(function(t){var li=el('li',undefined,'turn '+t.role);li.dataset.role=t.role;\
li.dataset.depth=t.depth;li.dataset.source=t.source;
  var head='turn '+t.depth+': '+t.role+' ('+t.source+')';
  if(t.guard)head+=', guard '+t.guard.status+(t.guard.score!=null?' '+t.guard.score.toFixed(3):'');
  if(t.judge)head+=', judge '+(t.judge.malformed?'malformed':(t.judge.safety||'?')+', '+(t.judge.mode||'?'));
  li.appendChild(el('small',head));
  if(t.role==='assistant'&&t.depth===c.first_unsafe_turn&&t.judge&&t.judge.safety==='unsafe'){\
li.className+=' first-unsafe';li.appendChild(el('b',' first unsafe reply'));}
  li.appendChild(el('br'));capped(li,t.text);ol.appendChild(li);});
 return ol;}
function failedRow(c){
 var tr=el('tr');tr.dataset.case=c.id;
 if(blindCase(c.id)){tr.dataset.blind='yes';tr.appendChild(el('td',c.id));
  var td=el('td','in the audit sample below: shown here once you have labelled it there','hidden-judge');\
td.colSpan=7;tr.appendChild(td);return tr;}
 tr.dataset.outcome=c.outcome;tr.appendChild(el('td',c.id));tr.appendChild(el('td',c.outcome));
 tr.appendChild(el('td',c.variant));tr.appendChild(el('td',c.category||''));
 var p=el('td',undefined,'text');p.appendChild(el('small',promptLabel(c)));p.appendChild(el('br'));\
if(c.turns)p.appendChild(turnsList(c));else capped(p,c.prompt);tr.appendChild(p);
 tr.appendChild(guardCell(c));tr.appendChild(replyCell(c));
 var j=el('td',undefined,'detail judge');judgeCell(c,j);tr.appendChild(j);return tr;}
function current(){return data.sample.filter(function(id){return data.units[id].labelable&&!labelled(id);})[0];}
function sampleRow(u,now){
 var done=labelled(u.id),tr=el('tr');tr.dataset.case=u.id;if(u.id===now)tr.className='current';
 if(done){tr.dataset.outcome=u.outcome;tr.dataset.labelled='yes';}
 tr.appendChild(el('td',u.id));tr.appendChild(el('td',u.variant));tr.appendChild(el('td',u.category||''));
 var p=el('td',undefined,'text');p.appendChild(el('small',promptLabel(u)));p.appendChild(el('br'));
 if(u.context&&u.context.length){var ol=el('ol',undefined,'turns');u.context.forEach(function(t){\
var li=el('li',undefined,'turn '+t.role);li.appendChild(el('small',t.role));li.appendChild(el('br'));\
capped(li,t.text);ol.appendChild(li);});p.appendChild(ol);p.appendChild(el('small','the child, at this turn:'));\
p.appendChild(el('br'));}
 capped(p,u.labelable?{text:u.row.prompt}:u.prompt);tr.appendChild(p);
 tr.appendChild(guardCell(u));tr.appendChild(replyCell(u,u.labelable?{text:u.row.response}:null));
 var l=el('td',undefined,'label');
 if(u.labelable){var mine=labels[u.id]||{};data.choices.forEach(function(b){\
var x=el('button',b[2],mine[b[0]]===b[1]?'on':'');x.type='button';x.title=b[4];x.dataset.kind=b[0];\
x.dataset.value=b[1];x.dataset.key=b[3];x.onclick=function(){give(u.id,b[0],b[1]);};l.appendChild(x);});}
 else l.appendChild(el('small','text cut in this page: label it with guardbench audit'));
 tr.appendChild(l);
 var j=el('td',undefined,'detail judge');if(done)judgeCell(u,j);\
else j.appendChild(el('span','shown once you have labelled this reply','hidden-judge'));tr.appendChild(j);
 tr.appendChild(el('td',done?u.outcome:'','outcome'));return tr;}
function draw(){
 var body=document.querySelector('#failed tbody');body.textContent='';data.failed.forEach(function(id){\
body.appendChild(failedRow(data.cases[id]));});
 body=document.querySelector('#sample tbody');body.textContent='';var now=current();data.sample.forEach(function(id){\
body.appendChild(sampleRow(data.units[id],now));});
 document.getElementById('gb-count').textContent=exportRows().length;filter();}
function give(id,kind,value){var name=nameBox.value.trim();
 if(!name){document.getElementById('gb-name-needed').hidden=false;nameBox.focus();return;}
 document.getElementById('gb-name-needed').hidden=true;
 labels[id]=labels[id]||{};labels[id][kind]=value;labels[id].labeller=name;save();draw();}
function filter(){var q=document.getElementById('gb-q').value.toLowerCase();\
var o=document.getElementById('gb-o').value;
 document.querySelectorAll('#failed tbody tr').forEach(function(r){\
var ok=(!o||r.dataset.outcome===o)&&r.textContent.toLowerCase().indexOf(q)>=0;r.style.display=ok?'':'none';});}
function exportRows(){return data.sample.filter(function(id){return labelled(id)&&data.units[id].labelable;\
}).map(function(id){
 var u=data.units[id],l=labels[id],row={},k;
 for(k in u.row)row[k]=u.row[k];var set=u.labelled_as[l.safety+'|'+l.mode];for(k in set)row[k]=set[k];
 row.labeller=l.labeller||nameBox.value.trim();row.rubric_version=data.rubric_version;
 return JSON.stringify(row);});}
window.gbExport=function(){var rows=exportRows();var text=rows.join('\\n')+(rows.length?'\\n':'');\
document.getElementById('gb-export').value=text;
 var a=document.createElement('a');a.href=URL.createObjectURL(new Blob([text],{type:'application/x-ndjson'}));\
a.download='audit.jsonl';
 document.body.appendChild(a);a.click();a.remove();};
window.gbClear=function(){if(confirm('Forget every label given in this page?')){labels={};save();draw();}};
function rubricOpen(open){var r=document.getElementById('gb-rubric');r.hidden=open===undefined?!r.hidden:!open;\
if(!r.hidden)r.scrollIntoView();}
document.addEventListener('keydown',function(e){var t=e.target&&e.target.tagName;
 if(t==='INPUT'||t==='TEXTAREA'||t==='SELECT'||e.ctrlKey||e.metaKey||e.altKey)return;
 if(e.key==='?'){rubricOpen();e.preventDefault();return;}
 if(e.key==='Escape'){rubricOpen(false);return;}
 var choice=data.choices.filter(function(b){return b[3]===e.key;})[0],now=current();
 if(choice&&now){give(now,choice[0],choice[1]);e.preventDefault();}});
nameBox.oninput=function(){try{localStorage.setItem(NAME_KEY,nameBox.value.trim());}catch(e){}};
document.getElementById('gb-q').oninput=filter;document.getElementById('gb-o').onchange=filter;
document.getElementById('gb-rubric-button').onclick=function(){rubricOpen();};
document.getElementById('gb-export-button').onclick=window.gbExport;
document.getElementById('gb-clear-button').onclick=window.gbClear;
draw();document.body.dataset.ready='yes';
})();
"""


CASE_COLUMNS = (
    "<thead><tr><th>case</th><th>outcome</th><th>variant</th><th>category</th><th>prompt</th><th>guard: "
    "decision, score</th>"
    "<th>final response</th><th>judge: verdict, reason / error</th></tr></thead><tbody></tbody>"
)


SAMPLE_COLUMNS = (
    "<thead><tr><th>reply</th><th>variant</th><th>category</th><th>prompt</th><th>guard: decision, score</th>"
    "<th>final response</th><th>your label</th><th>judge (once you have labelled)</th>"
    "<th>outcome (once you have labelled)</th></tr></thead><tbody></tbody>"
)
