from django import template

from chat.markdown import render_markdown

register = template.Library()
register.filter("markdown", render_markdown)
