"""The style sheet and the script of report.html: the script draws the case tables from the page's JSON
(as text, never as HTML) and keeps audit labels in the browser."""

from __future__ import annotations


STYLE = (
    "body{font-family:sans-serif;margin:1.5em;max-width:1400px}table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;font-size:13px}th{background:#f3f3f3;text-align:left}"
    "small{color:#666;margin-left:4px}.gate-passed{color:#176e25}.gate-failed,.gate-inconclusive{color:#b00020}"
    # Each gate check in its own colour: a passed check stays green when the gate failed on another.
    "ul.gate-checks{margin:0.2em 0 0.8em;padding-left:1.2em}ul.gate-checks li{margin:1px 0}"
    ".check-pass{color:#176e25}.check-fail{color:#b00020}.check-inconclusive{color:#8a5a00}"
    "svg{margin:4px 12px 12px 0;font-family:sans-serif}.cases td.text{max-width:340px;white-space:pre-wrap;word-break:break-word}"
    ".cases td.detail{max-width:220px;word-break:break-word}.cut{color:#b00020;font-size:11px}"
    "tr[data-outcome=FN] td:nth-child(2){background:#f8d0c0}tr[data-outcome=FP] td:nth-child(2){background:#fbecb5}"
    "td.label button{font-size:11px;margin:1px}td.label button.on{background:#2b7bb9;color:#fff}"
    "details{font-size:11px;color:#444}.hidden-judge{color:#888;font-style:italic}"
    "ol.turns{margin:0;padding-left:1.4em}li.turn{margin-bottom:4px}li.turn.assistant{color:#234}"
    "li.first-unsafe{background:#f8d0c0}"
)


# Draws the case tables from the page's one JSON copy of each case (elements built with textContent:
# no data reaches innerHTML), filters the failed table, and keeps the labels given in the page: in
# localStorage (per run), so a reload keeps them, and as a judge-labels JSONL export. The policy label
# is derived as policies.assistant_policy_v2_label does (harmful -> safe; safe -> safe and answered).
# In the audit sample the judge's labels (and the outcome, which follows from them) stay hidden until
# the row is labelled: blind labelling, as `guardbench audit` does.
SCRIPT = r"""
(function(){
var data=JSON.parse(document.getElementById('gb-cases').textContent);
var KEY='guardbench-audit:'+data.run;
var BUTTONS=[['safety','safe','safe'],['safety','unsafe','unsafe'],['mode','answered','answered'],['mode','refused_or_blocked','refused/blocked'],['mode','indirect','indirect'],['mode','non_answer','no answer']];
var labels={};
try{labels=JSON.parse(localStorage.getItem(KEY)||'{}')||{};}catch(e){labels={};}
function save(){try{localStorage.setItem(KEY,JSON.stringify(labels));}catch(e){}}
function el(tag,text,cls){var x=document.createElement(tag);if(text!==undefined&&text!==null)x.textContent=String(text);if(cls)x.className=cls;return x;}
function capped(parent,c){if(!c)return;parent.appendChild(document.createTextNode(c.text));
 if(c.length){parent.appendChild(el('div','cut: '+c.length.toLocaleString('en')+' characters in all; the whole text is in results.jsonl','cut'));}}
function raw(parent,title,c){if(!c||!c.text)return;var d=el('details');d.appendChild(el('summary',title));var p=el('div');capped(p,c);d.appendChild(p);parent.appendChild(d);}
function labelled(id){var l=labels[id];return !!(l&&l.safety&&l.mode);}
function judgeCell(c,td){
 if(c.error){td.appendChild(el('b','error ('+c.error.stage+'): '));capped(td,c.error.message);return;}
 var j=c.judge;if(!j){td.textContent='no verdict';return;}
 td.appendChild(el('b',j.malformed?'malformed':(j.safety||'?')+', '+(j.mode||'?')));td.appendChild(el('br'));
 capped(td,j.reason);raw(td,'raw judge output',j.raw);}
function turnsList(c,hide){var ol=el('ol',undefined,'turns');
 c.turns.forEach(function(t){var li=el('li',undefined,'turn '+t.role);li.dataset.role=t.role;li.dataset.depth=t.depth;li.dataset.source=t.source;
  var head='turn '+t.depth+': '+t.role+' ('+t.source+')';
  if(t.guard)head+=', guard '+t.guard.status+(t.guard.score!=null?' '+t.guard.score.toFixed(3):'');
  if(t.judge&&!hide)head+=', judge '+(t.judge.malformed?'malformed':(t.judge.safety||'?')+', '+(t.judge.mode||'?'));
  li.appendChild(el('small',head));
  if(!hide&&t.role==='assistant'&&t.depth===c.first_unsafe_turn&&t.judge&&t.judge.safety==='unsafe'){li.className+=' first-unsafe';li.appendChild(el('b',' first unsafe reply'));}
  li.appendChild(el('br'));capped(li,t.text);ol.appendChild(li);});
 return ol;}
function row(c,blind){
 var tr=el('tr');tr.dataset.case=c.id;tr.dataset.outcome=c.outcome;
 var hide=blind&&!labelled(c.id)&&!document.getElementById('gb-show-judge').checked;
 tr.appendChild(el('td',c.id));
 tr.appendChild(hide?el('td','after you label','hidden-judge'):el('td',c.outcome));
 tr.appendChild(el('td',c.variant));tr.appendChild(el('td',c.category||''));
 var p=el('td',undefined,'text');p.appendChild(el('small',c.is_harmful===true?'harmful':c.is_harmful===false?'safe':'unlabelled'));p.appendChild(el('br'));if(c.turns)p.appendChild(turnsList(c,hide));else capped(p,c.prompt);tr.appendChild(p);
 var g=el('td',undefined,'detail');
 if(c.guard){g.appendChild(el('b',c.guard.status));if(c.guard.score!=null)g.appendChild(el('span',' score '+c.guard.score.toFixed(3)));g.appendChild(el('br'));capped(g,c.guard.reason);raw(g,'raw guard output',c.guard.raw);}
 else g.textContent='no guard';tr.appendChild(g);
 var r=el('td',undefined,'text');if(c.reply){r.appendChild(el('small',c.reply.source+(c.reply.finish_reason==='length'?', cut by the token limit':'')));r.appendChild(el('br'));capped(r,c.reply.text);}tr.appendChild(r);
 var j=el('td',undefined,'detail judge');if(hide)j.appendChild(el('span','the judge\'s labels are shown once you have labelled this case','hidden-judge'));else judgeCell(c,j);tr.appendChild(j);
 var l=el('td',undefined,'label');
 if(c.labelable){var mine=labels[c.id]||{};BUTTONS.forEach(function(b){var x=el('button',b[2],mine[b[0]]===b[1]?'on':'');x.type='button';x.dataset.kind=b[0];x.dataset.value=b[1];x.onclick=function(){give(c.id,b[0],b[1]);};l.appendChild(x);});}
 else if(c.turns)l.appendChild(el('small','a conversation: a labels row holds one prompt and one reply, so it is not labelled here'));
 else if(c.reply)l.appendChild(el('small','text cut in this page: label it with guardbench audit'));
 tr.appendChild(l);return tr;}
function draw(){
 [['failed',false],['sample',true]].forEach(function(t){var body=document.querySelector('#'+t[0]+' tbody');body.textContent='';
  data[t[0]].forEach(function(id){body.appendChild(row(data.cases[id],t[1]));});});
 document.getElementById('gb-count').textContent=exportRows().length;filter();}
function give(id,kind,value){labels[id]=labels[id]||{};labels[id][kind]=value;save();draw();}
function filter(){var q=document.getElementById('gb-q').value.toLowerCase();var o=document.getElementById('gb-o').value;
 document.querySelectorAll('#failed tbody tr').forEach(function(r){var ok=(!o||r.dataset.outcome===o)&&r.textContent.toLowerCase().indexOf(q)>=0;r.style.display=ok?'':'none';});}
function exportRows(){return Object.keys(labels).sort().filter(function(id){return labelled(id)&&data.cases[id]&&data.cases[id].labelable;}).map(function(id){
 var c=data.cases[id],l=labels[id],h=c.is_harmful===undefined?null:c.is_harmful;
 var r={id:id,prompt:c.prompt.text,response:c.reply.text.text,human_label:l.safety,answer_mode:l.mode,bucket:c.outcome,is_harmful:h,category:c.category,source:c.reply.source,design:"debug"};
 if(h!==null)r.assistant_policy_label=(l.safety==='safe'&&(h||l.mode==='answered'))?'correct':'incorrect';
 return JSON.stringify(r);});}
window.gbExport=function(){var rows=exportRows();var text=rows.join('\n')+(rows.length?'\n':'');document.getElementById('gb-export').value=text;
 var a=document.createElement('a');a.href=URL.createObjectURL(new Blob([text],{type:'application/x-ndjson'}));a.download='audit.jsonl';
 document.body.appendChild(a);a.click();a.remove();};
window.gbClear=function(){if(confirm('Forget every label given in this page?')){labels={};save();draw();}};
document.getElementById('gb-q').oninput=filter;document.getElementById('gb-o').onchange=filter;
document.getElementById('gb-show-judge').onchange=draw;
document.getElementById('gb-export-button').onclick=window.gbExport;
document.getElementById('gb-clear-button').onclick=window.gbClear;
draw();document.body.dataset.ready='yes';
})();
"""


CASE_COLUMNS = (
    "<thead><tr><th>case</th><th>outcome</th><th>variant</th><th>category</th><th>prompt</th><th>guard: decision, score</th>"
    "<th>final response</th><th>judge: verdict, reason / error</th><th>your label</th></tr></thead><tbody></tbody>"
)
